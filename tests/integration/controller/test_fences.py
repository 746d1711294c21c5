"""The controller's decision fence on a real PostgreSQL: a deposed leader's decisions are ignored."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from services.controller.fences import DecisionFences
from shared.storage.engine import make_sessions

pytestmark = pytest.mark.integration


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(database_url)
    yield engine
    await engine.dispose()


async def test_a_decision_older_than_one_acted_on_is_stale(engine: AsyncEngine) -> None:
    fences = DecisionFences(make_sessions(engine))
    assert await fences.fresh("gang-a", 2)
    assert await fences.fresh("gang-a", 2)  # the same leader's next decision for the gang
    assert not await fences.fresh("gang-a", 1)  # the deposed leader, heard late
    assert await fences.fresh("gang-a", 3)
    assert await fences.fresh("gang-b", 1)  # fences are per gang


async def test_in_decisions_fenced_together_the_newest_epoch_of_a_gang_wins(engine: AsyncEngine) -> None:
    fences = DecisionFences(make_sessions(engine))
    assert await fences.fresh("gang-a", 5)
    verdicts = await asyncio.gather(
        fences.fresh("gang-a", 4),
        fences.fresh("gang-a", 6),
        fences.fresh("gang-b", 1),
        fences.fresh("gang-c", 2),
        fences.fresh("gang-c", 1),
    )
    # A gang asked for twice in one batch keeps its newest epoch; the older decision is stale.
    assert verdicts == [False, True, True, True, False]
    async with engine.connect() as connection:
        stored = dict((await connection.execute(text("SELECT gang_uid, epoch FROM gang_fences"))).all())
    assert stored == {"gang-a": 6, "gang-b": 1, "gang-c": 2}


async def test_an_older_cycle_of_the_same_leader_is_stale(engine: AsyncEngine) -> None:
    """A decision replayed late, or made before its job restarted, cannot undo a newer one."""
    fences = DecisionFences(make_sessions(engine))
    assert await fences.fresh("gang-a", 2, 7)
    assert await fences.fresh("gang-a", 2, 7)  # another decision of the same cycle
    assert not await fences.fresh("gang-a", 2, 6)
    assert await fences.fresh("gang-a", 3, 1)  # a new leader counts its cycles afresh
    assert not await fences.fresh("gang-a", 2, 9)
