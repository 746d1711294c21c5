"""The bus and the outbox count what happens to messages, on real NATS JetStream and PostgreSQL.

A platform team's alerts on dead letters, retries and a stuck outbox read these series
(docs/observability.md); here a handler that fails, then one that refuses, and an outbox whose
rows are not yet relayed, move them as an operator would see on /metrics.
"""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import REGISTRY
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from shared.bus.nats import NatsBus
from shared.bus.ports import ConsumerSpec
from shared.config import NatsSettings
from shared.domain.errors import PermanentError, TemporaryError
from shared.messages import jobs, subjects
from shared.messages.envelope import CloudEvent, new_event
from shared.storage import outbox, tables
from shared.storage.engine import make_sessions
from tests.waiting import until

pytestmark = pytest.mark.integration


def counted(name: str, durable: str) -> float:
    labels = {"stream": subjects.JOBS_STREAM, "durable": durable}
    return REGISTRY.get_sample_value(f"phalanx_consumer_{name}_total", labels) or 0.0


def event(name: str) -> CloudEvent[jobs.JobPhaseChanged]:
    data = jobs.JobPhaseChanged(
        namespace="default", name=name, uid=f"uid-{name}", previous=None, phase="Running"
    )
    return new_event(data, source="test")


async def connect(nats_url: str) -> NatsBus:
    bus = await NatsBus.connect(NatsSettings(url=nats_url), name="test-observed")
    await bus.ensure_streams()
    return bus


async def test_retries_and_dead_letters_are_counted_per_stream_and_consumer(nats_url: str) -> None:
    bus = await connect(nats_url)
    try:
        await _retries_and_dead_letters_are_counted(bus)
    finally:
        await bus.close()


async def _retries_and_dead_letters_are_counted(bus: NatsBus) -> None:
    calls = 0

    async def flaky(_: CloudEvent[jobs.JobPhaseChanged]) -> None:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise TemporaryError("API server unavailable", delay=0.05)

    async def refuse(_: CloudEvent[jobs.JobPhaseChanged]) -> None:
        raise PermanentError("job spec is malformed")

    options = {"backoff": (0.05,), "max_deliver": 5}
    flaky_stats = bus.consume(
        ConsumerSpec(subjects.JOBS_STREAM, "m-flaky", ["jobs.*.m.flaky"], **options), flaky
    )
    refused_stats = bus.consume(
        ConsumerSpec(subjects.JOBS_STREAM, "m-refuser", ["jobs.*.m.bad"], **options), refuse
    )
    await bus.publish(subjects.job_event("phase", "m", "flaky"), event("flaky"))
    await bus.publish(subjects.job_event("phase", "m", "bad"), event("bad"))
    await until(lambda: flaky_stats.handled == 1 and refused_stats.dead_lettered == 1)

    assert counted("redeliveries", "m-flaky") == 2  # two failed attempts before the third succeeded
    assert counted("handled", "m-flaky") == 1
    assert counted("dead_letters", "m-flaky") == 0
    assert counted("dead_letters", "m-refuser") == 1
    assert counted("handled", "m-refuser") == 0


async def test_the_outbox_depth_and_age_show_rows_waiting_until_the_relay_publishes(
    database_url: str, nats_url: str
) -> None:
    engine, bus = create_async_engine(database_url), await connect(nats_url)
    try:
        await _outbox_is_measured(make_sessions(engine), bus)
    finally:
        await bus.close()
        await engine.dispose()


async def _outbox_is_measured(sessions: async_sessionmaker[AsyncSession], bus: NatsBus) -> None:
    relay = outbox.OutboxRelay(sessions, tables.ControllerOutbox, bus)
    async with sessions() as session, session.begin():
        for i in range(3):
            outbox.enqueue(
                session, tables.ControllerOutbox, subjects.job_event("phase", "o", f"j{i}"), event(f"j{i}")
            )
    await asyncio.sleep(0.2)

    depth, age = await relay.measure()
    assert depth == 3
    assert age >= 0.1
    labels = {"table": "controller_outbox"}
    assert REGISTRY.get_sample_value("phalanx_outbox_depth", labels) == 3

    assert await relay.relay_once() == 3
    assert await relay.measure() == (0, 0.0)
    assert REGISTRY.get_sample_value("phalanx_outbox_oldest_age_seconds", labels) == 0
