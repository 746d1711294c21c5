"""The leading scheduler keeps each queue's decayed usage in PostgreSQL: a restart loses nothing.

queue_usage.py writes the plan's usage into `queue_usage` (at most every `every_seconds`) and a
scheduler that starts leading reads it back onto its first snapshot; the core then advances it
over the gap. Queues that left the usage leave the table.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from services.scheduler.core.snapshot import QueueUsage, Snapshot
from services.scheduler.queue_usage import UsageBook, write
from shared.storage.engine import make_sessions

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def empty_snapshot(now: datetime) -> Snapshot:
    return Snapshot(nodes=(), queues=(), gangs=(), now=now)


async def test_a_new_leader_reads_back_what_the_last_one_wrote(engine: AsyncEngine) -> None:
    sessions = make_sessions(engine)
    leader = UsageBook(every_seconds=15)
    await leader.prepare(sessions, empty_snapshot(NOW), epoch=1)
    first = QueueUsage(
        at=NOW, usage={"team": {"cpu": 1200.0, "nvidia.com/gpu": 3600.0}, "gone": {"cpu": 1.0}}
    )
    assert leader.due(first) is first  # nothing written yet this term
    async with sessions() as session, session.begin():
        await write(session, first)
    leader.committed(first, written=True)
    later = QueueUsage(at=NOW + timedelta(seconds=5), usage={"team": {"cpu": 1300.0}})
    assert leader.due(later) is None  # written 5 s ago: not yet due
    last = QueueUsage(
        at=NOW + timedelta(seconds=20), usage={"team": {"cpu": 1400.0, "nvidia.com/gpu": 3500.0}}
    )
    assert leader.due(last) is last
    async with sessions() as session, session.begin():
        await write(session, last)

    successor = UsageBook()  # another process, leading from epoch 2
    snapshot = await successor.prepare(sessions, empty_snapshot(NOW + timedelta(minutes=1)), epoch=2)

    assert snapshot.queue_usage == last  # "gone" left the table with the write that dropped it
