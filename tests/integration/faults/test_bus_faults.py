"""Path 5 of the fault plan: the bus keeps one object's order on retry, retries handler bugs,
bounds and records a hanging handler, and hands back a message of an unknown type; on a real
NATS JetStream server.
"""

from __future__ import annotations

import asyncio

import nats
import orjson
import pytest
from nats.js.api import RetentionPolicy

from shared.bus import bootstrap
from shared.bus.nats import NatsBus
from shared.bus.ports import ConsumerSpec
from shared.config import NatsSettings
from shared.messages import jobs, subjects
from shared.messages.envelope import CloudEvent, new_event
from tests.waiting import until

pytestmark = pytest.mark.integration
SUBJECT = subjects.job_event("phase", "default", "j1")


def phase(phase: str) -> CloudEvent[jobs.JobPhaseChanged]:
    data = jobs.JobPhaseChanged(namespace="default", name="j1", uid="uid-j1", previous=None, phase=phase)
    return new_event(data, source="test")


def spec(durable: str, **overrides: object) -> ConsumerSpec:
    options: dict[str, object] = {"backoff": (0.3,), "max_deliver": 3} | overrides
    return ConsumerSpec(subjects.JOBS_STREAM, durable, ["jobs.>"], **options)  # type: ignore[arg-type]


async def test_a_retried_message_is_not_overtaken_by_the_next_of_its_object(bus: NatsBus) -> None:
    handled: list[str] = []
    failed_once: set[str] = set()

    async def handle(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
        if event.data.phase == "Running" and "Running" not in failed_once:
            failed_once.add("Running")
            raise RuntimeError("the API server hiccuped")
        handled.append(event.data.phase)

    bus.consume(spec("ordered"), handle)
    await bus.publish(SUBJECT, phase("Running"))
    await bus.publish(SUBJECT, phase("Completed"))
    await until(lambda: len(handled) == 2)
    assert handled == ["Running", "Completed"]


async def test_a_handler_bug_is_retried_not_dead_lettered_at_once(bus: NatsBus) -> None:
    calls = 0

    async def handle(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ValueError("a bug, or a race that the next try does not hit")

    stats = bus.consume(spec("buggy"), handle)
    await bus.publish(SUBJECT, phase("Running"))
    await until(lambda: stats.handled == 1)
    assert stats.dead_lettered == 0


async def test_a_hanging_handler_is_cut_off_and_dead_lettered_with_a_record(bus: NatsBus) -> None:
    audit = await bus.js.subscribe("audit.controller.dead-lettered.>")

    async def hang(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
        await asyncio.Event().wait()

    stats = bus.consume(spec("hanging", handler_timeout=0.3, max_deliver=2, backoff=(0.05,)), hang)
    await bus.publish(SUBJECT, phase("Running"))
    record = await audit.next_msg(timeout=15)
    assert stats.dead_lettered == 1
    assert "ran past 0.3 s" in stats.errors[0]
    data = orjson.loads(record.data)["data"]
    assert data["action"] == "dead-lettered"
    assert "ran past" in data["reason"]
    assert data["details"]["durable"] == "hanging"


async def test_a_message_of_an_unknown_type_is_handed_back_before_it_is_dead_lettered(bus: NatsBus) -> None:
    async def handle(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
        raise AssertionError("an unknown type never reaches the handler")

    stats = bus.consume(spec("old-replica", backoff=(0.1,)), handle)
    future = {
        "specversion": "1.0",
        "id": "from-a-newer-version",
        "source": "phalanx/controller",
        "type": "phalanx.jobs.something.new.v9",
        "time": "2026-01-01T00:00:00Z",
        "datacontenttype": "application/json",
        "data": {"namespace": "default", "name": "j1"},
    }
    await bus.publish_raw(SUBJECT, orjson.dumps(future), msg_id="from-a-newer-version")
    await until(lambda: stats.dead_lettered == 1)
    # Handed back twice (for a replica that knows the type) before the third delivery gave up.
    assert stats.retried == 2
    assert "gave up after 3 deliveries" in stats.errors[0]


async def test_streams_are_bounded_and_relists_do_not_grow_them(bus: NatsBus) -> None:
    for name in subjects.STREAM_SUBJECTS:
        config = (await bus.js.stream_info(name)).config
        assert config.max_age, f"{name} keeps messages for a bounded time"
        assert (config.max_bytes or 0) > 0, f"{name} has a size cap"
    # Each relist republishes every object under a new relist id.
    pod = subjects.cluster_object("Pod", "default", "p-0")
    for relist in range(100):
        await bus.publish_raw(pod, b"{}", msg_id=f"relist-{relist}")
    kept = (await bus.js.stream_info(subjects.CLUSTER_STREAM, subjects_filter=pod)).state.messages
    assert kept == bus.settings.max_msgs_per_object


async def test_no_message_is_deleted_before_its_consumer_exists_or_while_it_is_away(bus: NatsBus) -> None:
    """reliability.md §6.2 T14, the stream configuration traps: interest or work-queue retention
    would delete what no consumer has asked for yet, and an inactivity threshold would remove a
    durable whose service is down, losing its position."""
    for name in subjects.STREAM_SUBJECTS:
        config = (await bus.js.stream_info(name)).config
        assert config.retention == RetentionPolicy.LIMITS, f"{name} keeps messages by limits only"
    published = [phase(f"p{i}") for i in range(5)]
    for event in published:  # before any consumer of this durable exists
        await bus.publish(SUBJECT, event)
    seen: list[str] = []

    async def handle(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
        seen.append(event.id)

    stats = bus.consume(ConsumerSpec(subjects.JOBS_STREAM, "late-comer", ["jobs.>"]), handle)
    await until(lambda: len(seen) == len(published))
    assert seen == [event.id for event in published]
    assert stats.dead_lettered == 0
    durable = await bus.js.consumer_info(subjects.JOBS_STREAM, "late-comer")
    assert not durable.config.inactive_threshold, "a durable outlives its service's downtime"


async def test_a_consumer_whose_stream_was_lost_resumes_once_the_streams_are_back(
    bus: NatsBus, nats_url: str
) -> None:
    """reliability.md §6.2 T13 at the bus: JetStream comes back without its store (every stream
    and durable gone). The consumer must not spin on failed fetches forever: it waits for the
    streams (made again by the bootstrap, or by itself where it may), makes its durable again and
    handles what is published after."""
    seen: list[str] = []

    async def handle(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
        seen.append(event.data.phase)

    bus.consume(ConsumerSpec(subjects.JOBS_STREAM, "survivor", ["jobs.>"]), handle)
    await bus.publish(SUBJECT, phase("Pending"))
    # The consumer makes its durable first, which takes a while on a loaded machine.
    await until(lambda: seen == ["Pending"], "the consumer handles Pending once", within=60)
    operator = await nats.connect(nats_url)
    try:
        for info in await operator.jetstream().streams_info():  # the store is lost
            await operator.jetstream().delete_stream(info.config.name)
    finally:
        await operator.close()
    await asyncio.sleep(2.0)  # the consumer meets the loss, as it would while NATS was away
    await bootstrap.create_streams(NatsSettings(url=nats_url))  # the operator's bootstrap runs
    await bus.publish(SUBJECT, phase("Running"))
    await until(lambda: seen == ["Pending", "Running"], within=20)
