"""Watcher kind leases on a real PostgreSQL: one replica publishes each kind, a standby takes a
dead one's kind and resumes at its resume point, and a restart under one's own identity relists."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from services.watcher.kind_leases import KindLeases
from shared.storage.engine import make_sessions

pytestmark = pytest.mark.integration
KINDS = ("Pod", "Job")


@pytest.fixture
def engine(migrated_engine: AsyncEngine) -> AsyncEngine:
    return migrated_engine


def _replica(engine: AsyncEngine, name: str) -> KindLeases:
    return KindLeases(make_sessions(engine), holder=name, lease_seconds=30.0)


async def _expire(engine: AsyncEngine, holder: str) -> None:
    async with engine.begin() as connection:  # the holder stopped renewing: its leases run out
        await connection.execute(
            text("UPDATE watcher_leases SET expires_at = now() WHERE holder = :h"), {"h": holder}
        )


async def test_the_first_replica_publishes_every_kind_after_a_relist_and_the_standby_none(
    engine: AsyncEngine,
) -> None:
    active, standby = _replica(engine, "w0"), _replica(engine, "w1")
    kept, taken = await active.step({}, KINDS)
    assert kept == set()
    assert {(t.kind, t.resume_from) for t in taken} == {("Pod", None), ("Job", None)}
    assert await standby.step({}, KINDS) == (set(), [])


async def test_a_standby_takes_a_dead_replica_s_kind_and_resumes_at_its_resume_point(
    engine: AsyncEngine,
) -> None:
    active, standby = _replica(engine, "w0"), _replica(engine, "w1")
    _, taken = await active.step({}, KINDS)
    epochs = {t.kind: t.epoch for t in taken}
    kept, _ = await active.step({kind: (epoch, "41") for kind, epoch in epochs.items()}, KINDS)
    assert kept == set(KINDS)
    await _expire(engine, "w0")
    _, taken_over = await standby.step({}, KINDS)
    assert {(t.kind, t.resume_from) for t in taken_over} == {("Pod", "41"), ("Job", "41")}
    assert all(t.epoch == epochs[t.kind] + 1 for t in taken_over)
    # The old holder, back from a pause, finds its kinds taken and stops publishing them.
    kept, _ = await active.step({kind: (epoch, "45") for kind, epoch in epochs.items()}, KINDS)
    assert kept == set()


async def test_a_restart_under_the_same_identity_relists_instead_of_resuming(engine: AsyncEngine) -> None:
    first = _replica(engine, "w0")
    _, taken = await first.step({}, ["Pod"])
    await first.step({"Pod": (taken[0].epoch, "41")}, ["Pod"])
    _, again = await _replica(engine, "w0").step({}, ["Pod"])
    assert [(t.kind, t.resume_from) for t in again] == [("Pod", None)]


async def test_a_clean_stop_hands_the_kind_over_at_once_with_its_resume_point(engine: AsyncEngine) -> None:
    active, standby = _replica(engine, "w0"), _replica(engine, "w1")
    _, taken = await active.step({}, ["Pod"])
    await active.release({"Pod": (taken[0].epoch, "77")})
    _, taken_over = await standby.step({}, ["Pod"])
    assert [(t.kind, t.resume_from) for t in taken_over] == [("Pod", "77")]
