"""The controller's job timers on a real PostgreSQL: what a restarted controller finds again."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from services.controller.core import effects as fx
from services.controller.core.jobstate import DelayedAction
from services.controller.timers import StoredTimer, TimerStore
from shared.storage.engine import make_sessions

pytestmark = pytest.mark.integration
NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(database_url)
    yield engine
    await engine.dispose()


def _abort(pod: str, due: datetime) -> DelayedAction:
    return DelayedAction(pod, "AbortJob", "PodFailed", due, "worker", pod, f"uid-{pod}")


async def test_scheduled_timers_are_found_again_with_their_delayed_actions(engine: AsyncEngine) -> None:
    store = TimerStore(make_sessions(engine))
    due = NOW + timedelta(seconds=30)
    action = _abort("j-worker-0", due)
    await store.apply(
        "job-1",
        [
            fx.ScheduleTimer("j-worker-0", due, "AbortJob"),
            fx.ScheduleTimer("ttl-after-finished", due, "DeleteJob"),
        ],
        {"j-worker-0": action},
    )
    found = sorted(await store.load(), key=lambda t: t.key)
    assert found == [
        StoredTimer("job-1", "j-worker-0", due, action),
        StoredTimer("job-1", "ttl-after-finished", due, None),
    ]


async def test_a_cancelled_timer_is_gone_and_a_rescheduled_one_keeps_only_its_new_deadline(
    engine: AsyncEngine,
) -> None:
    store = TimerStore(make_sessions(engine))
    first, later = NOW + timedelta(seconds=10), NOW + timedelta(seconds=40)
    await store.apply(
        "job-1",
        [fx.ScheduleTimer("a", first, "AbortJob"), fx.ScheduleTimer("b", first, "AbortJob")],
        {"a": _abort("a", first), "b": _abort("b", first)},
    )
    await store.apply(
        "job-1",
        [fx.CancelTimer("a"), fx.ScheduleTimer("b", later, "RestartJob")],
        {"b": _abort("b", later)},
    )
    assert [(t.key, t.due) for t in await store.load()] == [("b", later)]


async def test_a_fired_timer_goes_unless_its_deadline_moved_later(engine: AsyncEngine) -> None:
    store = TimerStore(make_sessions(engine))
    due = NOW + timedelta(seconds=10)
    changes = [fx.ScheduleTimer("a", due, "AbortJob"), fx.ScheduleTimer("b", due, "AbortJob")]
    await store.apply("job-1", changes, {"a": _abort("a", due), "b": _abort("b", due)})
    await store.apply("job-2", [fx.ScheduleTimer("c", due, "AbortJob")], {"c": _abort("c", due)})
    await store.fired("job-1", "a", due)
    await store.fired("job-1", "b", due - timedelta(seconds=1))  # fired early: b is not yet due
    assert sorted(t.key for t in await store.load()) == ["b", "c"]
    await store.forget("job-1")
    assert [t.key for t in await store.load()] == ["c"]
