"""Path 1 of the fault plan: an unconfirmed decision is never booked twice, on real PostgreSQL
and NATS.

A bind decision that the cluster has not yet confirmed keeps counting as allocated while ingest
lags the cluster, even past its time-to-live: the bind may have been carried out, and only ingest
can tell. Once ingest has caught up past that time, the decision expires in one place (marked so
in the same fenced commit) and its capacity is free again. A scheduler that has just become
leader does not cycle until ingest has caught up with what was published before.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from nats.js.api import AckPolicy, ConsumerConfig
from sqlalchemy.ext.asyncio import AsyncEngine

from services.scheduler.app import INGEST_DURABLE, INGEST_SUBJECTS
from services.scheduler.cycle_loop import CycleLoop
from services.scheduler.ingest_watermark import IngestWatermark
from services.scheduler.leadership import Leadership
from shared.bus.nats import NatsBus
from shared.clock import SystemClock
from shared.config import NatsSettings
from shared.messages import subjects
from shared.storage.engine import make_sessions
from tests.integration.faults.scheduler_rows import (
    add_bind_decision,
    add_gang,
    add_node_and_queue,
    add_pod,
    bind_states,
)
from tests.waiting import until

pytestmark = pytest.mark.integration


@pytest.fixture
async def bus(nats_url: str) -> AsyncIterator[NatsBus]:
    bus = await NatsBus.connect(NatsSettings(url=nats_url), name="test")
    await bus.ensure_streams()
    await bus.js.add_consumer(
        subjects.CLUSTER_STREAM,
        ConsumerConfig(
            durable_name=INGEST_DURABLE, ack_policy=AckPolicy.EXPLICIT, filter_subjects=INGEST_SUBJECTS
        ),
    )
    yield bus
    await bus.close()


async def seed(engine: AsyncEngine) -> None:
    """One node of one CPU; gangs `a` and `b` of one pod of one CPU each, `b` first in line."""
    now = datetime.now(UTC)
    async with engine.begin() as connection:
        await add_node_and_queue(connection, cpu_milli=1000)
        for name, created in (("a", now), ("b", now - timedelta(minutes=5))):
            await add_gang(connection, name, min_member=1, created=created)
            await add_pod(connection, f"{name}-0", name, created=created)


async def decide_a_long_ago(engine: AsyncEngine) -> None:
    """Pod a-0 was decided onto n a minute ago; its bind is not yet confirmed by ingest."""
    async with engine.begin() as connection:
        await add_bind_decision(
            connection, "a", "a-0", state="pending", created=datetime.now(UTC) - timedelta(minutes=1)
        )


async def lag_ingest(bus: NatsBus) -> None:
    """A cluster event that ingest has not handled yet."""
    await bus.publish_raw("cluster.pod.default.a-0", b"{}", msg_id="lagging")


async def catch_up_ingest(bus: NatsBus) -> None:
    subscription = await bus.js.pull_subscribe_bind(INGEST_DURABLE, stream=subjects.CLUSTER_STREAM)
    for msg in await subscription.fetch(10, timeout=2):
        await msg.ack_sync()


async def test_an_unconfirmed_bind_keeps_its_node_booked_until_ingest_has_caught_up(
    engine: AsyncEngine, bus: NatsBus
) -> None:
    await seed(engine)
    await decide_a_long_ago(engine)
    await lag_ingest(bus)
    sessions = make_sessions(engine)
    leadership = Leadership(sessions, holder="test", lease_seconds=30)
    assert await leadership.try_acquire_or_renew()
    watermark = IngestWatermark(bus, sessions, stream=subjects.CLUSTER_STREAM, durable=INGEST_DURABLE)
    loop = CycleLoop(
        sessions, leadership, clock=SystemClock(), period=1, decision_ttl=30, watermark=watermark
    )

    await watermark.probe()
    await loop.run_once()
    # a-0 may well be bound on n already: the cluster has not said otherwise yet.
    assert await bind_states(engine) == [("a-0", "pending")], "n stays booked for a-0, and b waits"

    await catch_up_ingest(bus)
    await watermark.probe()
    await loop.run_once()
    # Ingest has now seen the cluster past the decision's time-to-live, and a-0 is still not
    # bound: the decision expired, and n goes to b, first in line.
    assert await bind_states(engine) == [("a-0", "expired"), ("b-0", "pending")]


async def test_a_new_leader_does_not_cycle_before_ingest_has_caught_up(
    engine: AsyncEngine, bus: NatsBus
) -> None:
    await seed(engine)
    await lag_ingest(bus)
    sessions = make_sessions(engine)
    leadership = Leadership(sessions, holder="test", lease_seconds=30)
    watermark = IngestWatermark(bus, sessions, stream=subjects.CLUSTER_STREAM, durable=INGEST_DURABLE)
    loop = CycleLoop(
        sessions, leadership, clock=SystemClock(), period=0.1, decision_ttl=30, watermark=watermark
    )
    running = asyncio.create_task(loop.run())
    try:
        await asyncio.sleep(2)
        assert leadership.is_leader
        assert loop.cycle == 0, "no cycle while ingest lags"
        assert await bind_states(engine) == []
        await catch_up_ingest(bus)
        assert await until(lambda: bind_states(engine), "a bind once ingest caught up") == [
            ("b-0", "pending")
        ]
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
