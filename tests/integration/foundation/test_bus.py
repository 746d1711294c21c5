"""The bus against a real NATS JetStream server: what every service relies on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from shared.bus.nats import Bus, ConsumerSpec
from shared.config import NatsSettings
from shared.domain.errors import PermanentError, TemporaryError
from shared.messages import jobs, subjects
from shared.messages.envelope import CloudEvent, new_event
from tests.waiting import until

pytestmark = pytest.mark.integration


@pytest.fixture
async def bus(nats_url: str) -> AsyncIterator[Bus]:
    bus = await Bus.connect(NatsSettings(url=nats_url), name="test")
    await bus.ensure_streams()
    yield bus
    await bus.close()


def phase_event(name: str, phase: str, *, event_id: str | None = None) -> CloudEvent[jobs.JobPhaseChanged]:
    data = jobs.JobPhaseChanged(namespace="default", name=name, uid=f"uid-{name}", previous=None, phase=phase)
    return new_event(data, source="test", event_id=event_id)


def spec(durable: str, **overrides: object) -> ConsumerSpec:
    options: dict[str, object] = {"backoff": (0.05,), "max_deliver": 3} | overrides
    return ConsumerSpec(subjects.JOBS_STREAM, durable, ["jobs.>"], **options)  # type: ignore[arg-type]


async def test_streams_are_created_idempotently(bus: Bus) -> None:
    await bus.ensure_streams()
    await bus.ensure_streams()
    names = {info.config.name for info in await bus.js.streams_info()}
    assert names == set(subjects.STREAM_SUBJECTS)


async def test_published_event_is_consumed_typed(bus: Bus) -> None:
    seen: list[jobs.JobPhaseChanged] = []

    async def handle(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
        seen.append(event.data)

    bus.consume(spec("typed"), handle)
    await bus.publish(subjects.job_event("phase", "default", "j1"), phase_event("j1", "Running"))
    await until(lambda: seen)
    assert seen == [
        jobs.JobPhaseChanged(namespace="default", name="j1", uid="uid-j1", previous=None, phase="Running")
    ]


async def test_duplicate_message_id_is_stored_once(bus: Bus) -> None:
    event = phase_event("j1", "Running", event_id="same-id")
    subject = subjects.job_event("phase", "default", "j1")
    await bus.publish(subject, event)
    await bus.publish(subject, event)
    info = await bus.js.stream_info(subjects.JOBS_STREAM)
    assert info.state.messages == 1


async def test_nak_on_temporary_error_redelivers(bus: Bus) -> None:
    attempts: list[str] = []

    async def flaky(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
        attempts.append(event.id)
        if len(attempts) < 3:
            raise TemporaryError("API server unavailable", delay=0.05)

    stats = bus.consume(spec("flaky", max_deliver=5), flaky)
    await bus.publish(subjects.job_event("phase", "default", "j1"), phase_event("j1", "Running"))
    await until(lambda: stats.handled == 1)
    assert len(attempts) == 3
    assert len(set(attempts)) == 1, "the same event is redelivered"
    assert stats.retried == 2


async def test_permanent_error_goes_to_dead_letter_with_reason(bus: Bus) -> None:
    async def refuse(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
        raise PermanentError("job spec is malformed")

    stats = bus.consume(spec("refuser"), refuse)
    dead = await bus.js.subscribe(subjects.deadletter(subjects.JOBS_STREAM, "refuser"))
    await bus.publish(subjects.job_event("phase", "default", "bad"), phase_event("bad", "Running"))
    message = await dead.next_msg(timeout=10)
    assert message.headers is not None
    assert "job spec is malformed" in message.headers["Phalanx-Reason"]
    assert message.headers["Phalanx-Original-Subject"] == "jobs.phase.default.bad"
    assert stats.dead_lettered == 1


async def test_repeated_failure_is_dead_lettered_after_max_deliver(bus: Bus) -> None:
    attempts = 0

    async def broken(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
        nonlocal attempts
        attempts += 1
        raise RuntimeError("bug")

    stats = bus.consume(spec("broken", max_deliver=3), broken)
    await bus.publish(subjects.job_event("phase", "default", "j9"), phase_event("j9", "Running"))
    await until(lambda: stats.dead_lettered == 1)
    assert attempts == 3


async def test_undecodable_payload_is_dead_lettered(bus: Bus) -> None:
    async def never(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
        raise AssertionError("must not be called")

    stats = bus.consume(spec("strict"), never)
    await bus.publish_raw("jobs.phase.default.x", b'{"type": "nobody.knows"}', msg_id="junk")
    await until(lambda: stats.dead_lettered == 1)
    assert "unknown event type" in stats.errors[0]


async def test_events_of_one_object_are_handled_in_order(bus: Bus) -> None:
    order: dict[str, list[str]] = {}
    first_failure = {"j1"}

    async def record(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
        name = event.data.name
        if event.data.phase == "p0" and name in first_failure:
            first_failure.discard(name)
            raise TemporaryError("retry the first", delay=0.05)
        order.setdefault(name, []).append(event.data.phase)

    phases = [f"p{i}" for i in range(20)]
    for name in ("j1", "j2"):
        for phase in phases:
            await bus.publish(subjects.job_event("phase", "default", name), phase_event(name, phase))
    bus.consume(spec("ordered", max_deliver=10), record)
    await until(lambda: len(order.get("j1", [])) == 20 and len(order.get("j2", [])) == 20)
    assert order["j1"] == phases
    assert order["j2"] == phases


async def test_names_with_dots_stay_one_subject_token(bus: Bus) -> None:
    seen: list[str] = []

    async def handle(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
        seen.append(event.data.name)

    only_one_object = ConsumerSpec(
        subjects.JOBS_STREAM,
        "dotted",
        [subjects.job_event("phase", "default", "my.job.v2")],
        backoff=(0.05,),
    )
    bus.consume(only_one_object, handle)
    await bus.publish(
        subjects.job_event("phase", "default", "my.job.v2"), phase_event("my.job.v2", "Running")
    )
    await bus.publish(subjects.job_event("phase", "default", "my"), phase_event("my", "Running"))
    await until(lambda: seen)
    await asyncio.sleep(0.3)
    assert seen == ["my.job.v2"]


async def test_consumer_resumes_after_restart(nats_url: str) -> None:
    """A durable consumer picks up where it stopped: nothing acked is seen again, nothing is lost."""
    seen: list[str] = []

    async def handle(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
        seen.append(event.data.phase)

    first = await Bus.connect(NatsSettings(url=nats_url), name="first")
    await first.ensure_streams()
    first.consume(spec("durable"), handle)
    await first.publish(subjects.job_event("phase", "default", "j1"), phase_event("j1", "a"))
    await until(lambda: seen == ["a"])
    await first.close()

    second = await Bus.connect(NatsSettings(url=nats_url), name="second")
    await second.publish(subjects.job_event("phase", "default", "j1"), phase_event("j1", "b"))
    second.consume(spec("durable"), handle)
    await until(lambda: seen == ["a", "b"])
    await second.close()
