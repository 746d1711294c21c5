"""Issue #15's "pending decisions stay counted until confirmed or explicitly abandoned", for a gang
whose decision has begun, on real PostgreSQL.

Once one bind of a gang's decision is confirmed, the controller carries out the rest however late
(services/controller/gangs.py). So the scheduler keeps counting the rest past the decision's
time-to-live: their room is not offered to another gang, which would leave this one half bound
for good. They stop counting only when confirmed, when their pod is gone, or after the much
longer `decision_begun_ttl` (services/scheduler/decision_expiry.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from services.scheduler.cycle_loop import CycleLoop
from services.scheduler.leadership import Leadership
from shared.clock import SystemClock
from shared.storage import tables
from shared.storage.engine import make_sessions
from tests.integration.faults.scheduler_rows import (
    add_bind_decision,
    add_gang,
    add_node_and_queue,
    add_pod,
    bind_states,
)

pytestmark = pytest.mark.integration
TTL = 30.0


async def seed(engine: AsyncEngine, decided_ago: timedelta, *, epoch: int = 1) -> None:
    """Node n of two CPUs. Gang `a` (two pods of one CPU, both needed) was decided onto n
    `decided_ago`: a-0's bind is confirmed, a-1's still pending. Gang `b` (one pod of one CPU)
    waits, first in line. The scheduler that cycles next leads in epoch 1."""
    now = datetime.now(UTC)
    async with engine.begin() as connection:
        await add_node_and_queue(connection, cpu_milli=2000)
        await add_gang(connection, "a", min_member=2, created=now)
        await add_gang(connection, "b", min_member=1, created=now - timedelta(hours=1))
        await add_pod(connection, "a-0", "a", created=now, node="n")
        await add_pod(connection, "a-1", "a", created=now)
        await add_pod(connection, "b-0", "b", created=now)
        for pod, state in (("a-0", "confirmed"), ("a-1", "pending")):
            await add_bind_decision(connection, "a", pod, state=state, created=now - decided_ago, epoch=epoch)


async def one_cycle(engine: AsyncEngine) -> None:
    sessions = make_sessions(engine)
    leadership = Leadership(sessions, holder="test", lease_seconds=30)
    assert await leadership.try_acquire_or_renew()
    assert leadership.epoch == 1
    loop = CycleLoop(sessions, leadership, clock=SystemClock(), period=1, decision_ttl=TTL)
    await loop.run_once()


async def test_a_begun_gangs_unconfirmed_bind_keeps_its_room_past_the_ttl(engine: AsyncEngine) -> None:
    await seed(engine, decided_ago=timedelta(minutes=1))  # twice the TTL
    await one_cycle(engine)
    assert await bind_states(engine) == [("a-0", "confirmed"), ("a-1", "pending")], (
        "b is not placed in a-1's room"
    )


async def test_a_begun_gangs_bind_expires_after_the_longer_bound(engine: AsyncEngine) -> None:
    await seed(engine, decided_ago=timedelta(seconds=TTL * 10 + 60))
    await one_cycle(engine)
    assert await bind_states(engine) == [("a-0", "confirmed"), ("a-1", "expired"), ("b-0", "pending")]


async def test_a_begun_gangs_bind_of_a_pod_gone_expires_at_the_ttl(engine: AsyncEngine) -> None:
    await seed(engine, decided_ago=timedelta(minutes=1))
    async with engine.begin() as connection:
        await connection.execute(update(tables.Pod).where(tables.Pod.uid == "a-1").values(deleted=True))
    await one_cycle(engine)
    assert await bind_states(engine) == [("a-0", "confirmed"), ("a-1", "expired"), ("b-0", "pending")]


async def test_a_deposed_leaders_begun_gang_bind_expires_at_the_ttl(engine: AsyncEngine) -> None:
    """The controller refuses an older epoch's decision, begun or not, so its room is not kept
    for it: after a takeover the gang's unbound pods are placed again after the TTL."""
    await seed(engine, decided_ago=timedelta(minutes=1), epoch=0)
    await one_cycle(engine)
    assert await bind_states(engine) == [("a-0", "confirmed"), ("a-1", "expired"), ("b-0", "pending")]
