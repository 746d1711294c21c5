"""Controller shard leases on a real PostgreSQL: replicas share the shards, a joining one gets its
part without anyone restarting, a dead one's shards move, and a replica whose shard moved away is
refused its next write."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from services.controller.core.sharding import shard_of
from services.controller.shard_leases import (
    ReplicaNameTaken,
    ShardCountMismatch,
    ShardLeases,
    ShardLost,
    acting_for,
)
from shared.storage.engine import make_sessions

pytestmark = pytest.mark.integration
SHARDS = 8


@pytest.fixture
def engine(migrated_engine: AsyncEngine) -> AsyncEngine:
    return migrated_engine


def _replica(engine: AsyncEngine, name: str, *, lease: float = 30.0) -> ShardLeases:
    return ShardLeases(make_sessions(engine), holder=name, shards=SHARDS, lease_seconds=lease)


async def _settle(*replicas: ShardLeases) -> None:
    for _ in range(3):  # renewals in turn, as their loops would make them
        for replica in replicas:
            await replica.step()


async def test_a_lone_replica_holds_every_shard_and_a_joining_one_gets_half(engine: AsyncEngine) -> None:
    a, b = _replica(engine, "a"), _replica(engine, "b")
    assert await a.step() == frozenset(range(SHARDS))
    await _settle(a, b)
    assert len(a.held) == len(b.held) == SHARDS // 2
    assert a.held.isdisjoint(b.held)


async def test_a_dead_replica_s_shards_move_once_its_lease_runs_out(engine: AsyncEngine) -> None:
    a, b = _replica(engine, "a", lease=2.0), _replica(engine, "b", lease=2.0)
    await _settle(a, b)
    dead = set(a.held)
    async with engine.begin() as connection:  # a stops renewing: its lease runs out
        await connection.execute(text("UPDATE controller_shards SET expires_at = now() WHERE holder = 'a'"))
        await connection.execute(text("UPDATE controller_members SET expires_at = now() WHERE holder = 'a'"))
    assert await b.step() == dead
    assert b.held == frozenset(range(SHARDS))


async def test_a_replica_whose_shard_was_taken_stops_writing_for_its_jobs(engine: AsyncEngine) -> None:
    a = _replica(engine, "a")
    await a.step()
    key = ("team-a", "train")
    with acting_for(key):
        a.guard()  # ours: allowed
    async with engine.begin() as connection:  # another replica took the shard over (new epoch)
        await connection.execute(
            text("UPDATE controller_shards SET holder = 'b', epoch = epoch + 1 WHERE shard = :s"),
            {"s": shard_of(key, SHARDS)},
        )
    await a.step()
    assert not a.acts_for(key)
    with acting_for(key), pytest.raises(ShardLost, match="moved to another replica"):
        a.guard()


async def test_a_restart_under_the_same_identity_takes_its_shards_back_with_a_new_epoch(
    engine: AsyncEngine,
) -> None:
    first = _replica(engine, "a")
    await first.step()
    again = _replica(engine, "a")
    assert await again.step() == frozenset(range(SHARDS))
    await first.step()  # the old run, if it still ran, finds every shard under another epoch
    assert first.held == frozenset()


async def test_replicas_configured_with_another_number_of_shards_are_refused(engine: AsyncEngine) -> None:
    await _replica(engine, "a").step()
    other = ShardLeases(make_sessions(engine), holder="b", shards=SHARDS * 2, lease_seconds=30.0)
    refusal = "CONTROLLER_SHARDS is 16 but the controller_shards table has 8"
    with pytest.raises(ShardCountMismatch, match=refusal):
        await other.step()


async def test_a_second_live_process_with_the_same_replica_number_is_refused(engine: AsyncEngine) -> None:
    first = _replica(engine, "host-a/controller-1")
    await first.join()
    twin = ShardLeases(make_sessions(engine), holder="host-b/controller-1", shards=SHARDS, lease_seconds=1.5)
    with pytest.raises(ReplicaNameTaken, match="'controller-1' is in use by host-a/controller-1"):
        await twin.join(patience=1)
    other = _replica(engine, "host-b/controller-2")  # its own number: welcome
    await other.join()


async def test_jobs_turned_away_while_lapsed_are_synced_again(engine: AsyncEngine) -> None:
    steady = _replica(engine, "a")
    await steady.step()
    assert await steady.step() == frozenset()  # renewed in time: nothing to sync again
    assert steady.take_turned_away() == frozenset()
    # A replica whose every renewal comes too late by its own clock (here: a margin as long as
    # the lease), as when PostgreSQL was away: it stops acting at once. A renewal that finds
    # nobody took its shards hands back for a resync the jobs it turned away, and only those.
    late = ShardLeases(
        make_sessions(engine), holder="a", shards=SHARDS, lease_seconds=30.0, margin_seconds=30.0
    )
    await late.step()
    assert await late.step() == frozenset()
    assert late.take_turned_away() == frozenset()  # lapsed, but nothing was asked of it meanwhile
    assert not late.acts_for(("team-a", "train"))
    assert await late.step() == frozenset()  # no shard changed hands
    assert late.take_turned_away() == {("team-a", "train")}
    assert late.take_turned_away() == frozenset()  # handed back once


async def test_a_renewal_asked_in_time_and_answered_late_syncs_what_it_turned_away(
    engine: AsyncEngine,
) -> None:
    """On a starved machine a renewal can start before the lease lapses and end after it: the
    jobs turned away in between must be synced again, not left for the periodic resync."""
    leases = ShardLeases(
        make_sessions(engine), holder="a", shards=SHARDS, lease_seconds=2.0, margin_seconds=1.4
    )
    await leases.step()  # valid for 0.6 s by its clock
    job = ("team-a", "train")
    assert leases.acts_for(job)
    async with engine.connect() as blocker:  # PostgreSQL answers the next renewal late
        await blocker.execute(text("SELECT 1 FROM controller_members WHERE holder = 'a' FOR UPDATE"))
        renewal = asyncio.create_task(leases.step())
        await asyncio.sleep(1.0)
        assert not renewal.done()
        assert not leases.acts_for(job)  # lapsed meanwhile: a watch event for the job is turned away
        await blocker.rollback()
    await renewal
    assert leases.take_turned_away() == {job}


async def test_a_job_turned_away_whose_shard_moved_is_left_to_the_new_holder(engine: AsyncEngine) -> None:
    a = ShardLeases(make_sessions(engine), holder="a", shards=SHARDS, lease_seconds=30.0, margin_seconds=30.0)
    await a.step()
    job = ("team-a", "train")
    assert not a.acts_for(job)  # lapsed by a's clock
    async with engine.begin() as connection:  # meanwhile its row runs out and b takes the shard
        await connection.execute(text("UPDATE controller_shards SET expires_at = now() WHERE holder = 'a'"))
        await connection.execute(text("UPDATE controller_members SET expires_at = now() WHERE holder = 'a'"))
    b = _replica(engine, "b")
    assert shard_of(job, SHARDS) in await b.step()  # b syncs it as a shard it gained
    await a.step()
    assert a.take_turned_away() == frozenset()
