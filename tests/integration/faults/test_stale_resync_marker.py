"""Path 6 of the fault plan: a relist marker redelivered late does not tombstone the rows of a
newer relist, on a real PostgreSQL.

Relist r1 (at resourceVersion 10) and then relist r2 (at 20) both saw pod `bound`; r2's events
stamped its row with r2's relist id. r1's marker, redelivered after r2's, would tombstone every
row not stamped r1, so the bound pod would vanish and its node look free.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from services.scheduler.ingest import Ingester
from shared.messages.cluster import KindResynced
from shared.messages.envelope import CloudEvent, new_event
from shared.storage.engine import make_sessions
from tests.integration.scheduler.test_ingest import pod, rows

pytestmark = pytest.mark.integration


def marker(relist_id: str, version: int) -> CloudEvent[Any]:
    return new_event(KindResynced(kind="Pod", relist_id=relist_id, resource_version=version), source="test")


async def test_an_old_relist_marker_redelivered_tombstones_nothing_of_a_newer_relist(
    engine: AsyncEngine,
) -> None:
    ingester = Ingester(make_sessions(engine), scheduler_names=["volcano"])
    await ingester.handle([pod("bound", 3, relist="r1"), marker("r1", 10)])
    await ingester.handle([pod("bound", 3, relist="r2"), pod("vanished", 4), marker("r2", 20)])
    assert (await rows(engine))["vanished"][2] is True, "r2 tombstones what it did not see"

    await ingester.handle([marker("r1", 10)])
    assert (await rows(engine))["bound"][2] is False, "the old marker leaves r2's rows alone"
