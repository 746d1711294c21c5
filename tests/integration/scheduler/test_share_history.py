"""The leading scheduler keeps each queue's share over the last hours in PostgreSQL, bounded.

share_history.py writes the last cycle's queue figures to `queue_share_history` and deletes rows
older than the hours it keeps; figures no cycle refreshed lately (a standby, a deposed leader)
are not written.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from services.scheduler import metrics
from services.scheduler.core.plan import QueueFigures
from services.scheduler.share_history import ShareHistory
from shared.domain.resources import Resources
from shared.storage import tables
from shared.storage.engine import make_sessions

pytestmark = pytest.mark.integration


def figures(name: str, share: float) -> QueueFigures:
    none = Resources()
    return QueueFigures(name, 1, none, none, none, None, share, False)


@pytest.fixture
def fresh_figures() -> Iterator[None]:
    saved = metrics._latest_queues
    metrics._latest_queues = ((figures("team", 0.5), figures("default", 1.5)), time.monotonic())
    yield
    metrics._latest_queues = saved


async def samples(engine: AsyncEngine) -> list[tuple[str, float, datetime]]:
    table = tables.QueueShareSample
    async with engine.connect() as connection:
        rows = await connection.execute(select(table.queue, table.share, table.sampled_at).order_by(table.id))
        return [(r.queue, r.share, r.sampled_at) for r in rows]


async def test_each_queues_share_is_written_and_rows_past_the_kept_hours_go(
    engine: AsyncEngine, fresh_figures: None
) -> None:
    sessions = make_sessions(engine)
    old = datetime.now(UTC) - timedelta(hours=25)
    async with sessions() as session, session.begin():
        await session.execute(insert(tables.QueueShareSample).values(queue="team", sampled_at=old, share=0.1))
    history = ShareHistory(sessions, every_seconds=60, keep_hours=24)

    assert await history.sample_once()

    kept = await samples(engine)
    assert [(queue, share) for queue, share, _ in kept] == [("team", 0.5), ("default", 1.5)]
    assert all(at > old for _, _, at in kept)


async def test_figures_no_cycle_refreshed_lately_are_not_written(engine: AsyncEngine) -> None:
    saved = metrics._latest_queues
    metrics._latest_queues = ((figures("team", 0.5),), time.monotonic() - 600)
    try:
        assert not await ShareHistory(make_sessions(engine), every_seconds=60, keep_hours=24).sample_once()
    finally:
        metrics._latest_queues = saved
    assert await samples(engine) == []
