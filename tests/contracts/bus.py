"""The contract of the `Bus` port (shared/bus/ports.py): what every service relies on.

Run against JetStream by tests/integration/foundation/test_bus.py and against the in-memory twin
by tests/unit/shared/test_memory_bus.py. The subclass supplies `connect`: an async factory of
connections to one and the same server (or broker), each closed by the fixture afterwards.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from shared.bus.ports import Bus, ConsumerSpec
from shared.domain.errors import PermanentError, TemporaryError
from shared.messages import jobs, subjects
from shared.messages.envelope import CloudEvent, decode, new_event
from tests.waiting import until

Connect = Callable[[], Awaitable[Bus]]


def phase_event(name: str, phase: str, *, event_id: str | None = None) -> CloudEvent[jobs.JobPhaseChanged]:
    data = jobs.JobPhaseChanged(namespace="default", name=name, uid=f"uid-{name}", previous=None, phase=phase)
    return new_event(data, source="test", event_id=event_id)


def spec(durable: str, **overrides: Any) -> ConsumerSpec:
    options: dict[str, Any] = {"backoff": (0.05,), "max_deliver": 3} | overrides
    return ConsumerSpec(subjects.JOBS_STREAM, durable, ["jobs.>"], **options)


def subject(name: str) -> str:
    return subjects.job_event("phase", "default", name)


class Recorder:
    """A handler that records what it was handed: (name, phase) per event."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    async def __call__(self, event: CloudEvent[Any]) -> None:
        self.seen.append((event.data.name, event.data.phase))


class BusContract:
    async def test_a_published_event_reaches_a_consumer_typed(self, connect: Connect) -> None:
        bus = await connect()
        seen: list[jobs.JobPhaseChanged] = []

        async def handle(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
            seen.append(event.data)

        bus.consume(spec("typed"), handle)
        await bus.publish(subject("j1"), phase_event("j1", "Running"))
        await until(lambda: seen)
        assert seen == [
            jobs.JobPhaseChanged(namespace="default", name="j1", uid="uid-j1", previous=None, phase="Running")
        ]

    async def test_a_repeated_message_id_is_delivered_once(self, connect: Connect) -> None:
        bus = await connect()
        record = Recorder()
        bus.consume(spec("dedup"), record)
        await bus.publish(subject("j1"), phase_event("j1", "a", event_id="same-id"))
        await bus.publish(subject("j1"), phase_event("j1", "a", event_id="same-id"))
        await bus.publish_raw(
            subject("j1"), phase_event("j1", "a", event_id="same-id").to_bytes(), msg_id="same-id"
        )
        await bus.publish(subject("j1"), phase_event("j1", "b"))
        await until(lambda: ("j1", "b") in record.seen)
        assert record.seen == [("j1", "a"), ("j1", "b")]  # one subject: what came first was seen first

    async def test_one_objects_events_are_handled_in_order_while_others_go_on(self, connect: Connect) -> None:
        bus = await connect()
        order: dict[str, list[str]] = {}
        first_failure = {"j1"}

        async def handle(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
            name = event.data.name
            if event.data.phase == "p0" and name in first_failure:
                first_failure.discard(name)
                raise TemporaryError("retry the first", delay=0.05)
            order.setdefault(name, []).append(event.data.phase)

        phases = [f"p{i}" for i in range(20)]
        for name in ("j1", "j2"):
            for phase in phases:
                await bus.publish(subject(name), phase_event(name, phase))
        bus.consume(spec("ordered", max_deliver=10), handle)
        await until(lambda: len(order.get("j1", [])) == 20 and len(order.get("j2", [])) == 20)
        assert order == {"j1": phases, "j2": phases}

    async def test_a_failing_handler_is_retried_until_it_succeeds(self, connect: Connect) -> None:
        bus = await connect()
        attempts: list[str] = []

        async def flaky(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
            attempts.append(event.id)
            if len(attempts) < 3:
                raise TemporaryError("API server unavailable", delay=0.05)

        stats = bus.consume(spec("flaky", max_deliver=5), flaky)
        await bus.publish(subject("j1"), phase_event("j1", "Running"))
        await until(lambda: stats.handled == 1)
        assert len(attempts) == 3
        assert len(set(attempts)) == 1, "the same event is delivered again"
        assert stats.retried == 2

    async def test_a_permanent_error_dead_letters_at_once_and_the_next_event_goes_on(
        self, connect: Connect
    ) -> None:
        bus = await connect()
        attempts: list[str] = []

        async def refuse_the_bad(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
            attempts.append(event.data.phase)
            if event.data.phase == "bad":
                raise PermanentError("job spec is malformed")

        dead = Recorder()
        bus.consume(
            ConsumerSpec(
                subjects.DEADLETTER_STREAM, "dead", [subjects.deadletter(subjects.JOBS_STREAM, "refuser")]
            ),
            dead,
        )
        stats = bus.consume(spec("refuser"), refuse_the_bad)
        await bus.publish(subject("j1"), phase_event("j1", "bad"))
        await bus.publish(subject("j1"), phase_event("j1", "good"))
        await until(lambda: stats.handled == 1 and dead.seen)
        assert attempts == ["bad", "good"]
        assert dead.seen == [("j1", "bad")]
        assert stats.dead_lettered == 1
        assert "job spec is malformed" in stats.errors[0]

    async def test_a_handler_that_always_fails_is_dead_lettered_after_max_deliver(
        self, connect: Connect
    ) -> None:
        bus = await connect()
        attempts = 0

        async def broken(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
            nonlocal attempts
            attempts += 1
            raise RuntimeError("bug")

        stats = bus.consume(spec("broken", max_deliver=3), broken)
        await bus.publish(subject("j9"), phase_event("j9", "Running"))
        await until(lambda: stats.dead_lettered == 1)
        assert attempts == 3
        assert "gave up after 3 attempts" in stats.errors[0]

    async def test_an_unknown_event_type_is_handed_back_then_dead_lettered(self, connect: Connect) -> None:
        bus = await connect()

        async def never(event: CloudEvent[Any]) -> None:
            raise AssertionError("must not be called")

        stats = bus.consume(spec("strict"), never)
        await bus.publish_raw(subject("x"), b'{"type": "nobody.knows"}', msg_id="junk")
        await until(lambda: stats.dead_lettered == 1)
        assert stats.retried == 2, "naked twice, delivered again after each"
        assert "unknown event type" in stats.errors[0]

    async def test_a_durable_consumer_resumes_after_its_last_acknowledged_event(
        self, connect: Connect
    ) -> None:
        record = Recorder()
        first = await connect()
        first.consume(spec("durable"), record)
        await first.publish(subject("j1"), phase_event("j1", "a"))
        await until(lambda: record.seen == [("j1", "a")])
        await first.close()

        second = await connect()
        await second.publish(subject("j1"), phase_event("j1", "b"))
        second.consume(spec("durable"), record)
        await until(lambda: len(record.seen) == 2)
        assert record.seen == [("j1", "a"), ("j1", "b")]

    async def test_a_consumer_of_new_events_only_skips_what_came_before(self, connect: Connect) -> None:
        bus = await connect()
        await bus.publish(subject("old"), phase_event("old", "a"))
        record = Recorder()
        bus.consume(spec("fresh", deliver_new_only=True), record)

        async def subscribed() -> bool:
            try:
                await bus.position(subjects.JOBS_STREAM, "fresh")
            except Exception:  # not made yet: the consumer starts in the background
                return False
            return True

        await until(subscribed)
        await bus.publish(subject("new"), phase_event("new", "b"))
        await until(lambda: record.seen)
        assert record.seen == [("new", "b")]

    async def test_batches_are_handed_over_whole_and_a_failing_one_event_by_event(
        self, connect: Connect
    ) -> None:
        bus = await connect()
        batches: list[list[str]] = []

        async def handle(events: list[CloudEvent[Any]]) -> None:
            names = [event.data.name for event in events]
            if len(names) > 1 and "poison" in names:
                raise ValueError("one of them is bad")
            if names == ["poison"]:
                raise PermanentError("bad")
            batches.append(names)

        for name in ("a", "b", "poison", "c"):
            await bus.publish(subject(name), phase_event(name, "Running"))
        stats = bus.consume_batches(spec("batches"), handle)
        await until(lambda: stats.handled == 3 and stats.dead_lettered == 1)
        assert sorted(name for batch in batches for name in batch) == ["a", "b", "c"]

    async def test_pipelined_and_many_at_once_keep_their_order(self, connect: Connect) -> None:
        bus = await connect()
        record = Recorder()
        bus.consume(spec("order"), record)
        pipe = bus.pipeline()
        for phase in ("p0", "p1", "p2"):
            await pipe.send(subject("j1"), phase_event("j1", phase).to_bytes(), f"pipe-{phase}")
        await pipe.drain()
        await bus.publish_many(
            [(subject("j1"), phase_event("j1", p).to_bytes(), f"many-{p}") for p in ("p3", "p4")]
        )
        await until(lambda: len(record.seen) == 5)
        assert [phase for _, phase in record.seen] == ["p0", "p1", "p2", "p3", "p4"]

    async def test_the_position_shows_a_consumer_caught_up(self, connect: Connect) -> None:
        bus = await connect()
        stats = bus.consume(spec("caught-up"), Recorder())
        for phase in ("a", "b", "c"):
            await bus.publish(subject("j1"), phase_event("j1", phase))
        await until(lambda: stats.handled == 3)

        async def caught_up() -> bool:
            position = await bus.position(subjects.JOBS_STREAM, "caught-up")
            return position.pending == 0 and position.ack_pending == 0 and position.ack_floor == 3

        await until(caught_up)
        position = await bus.position(subjects.JOBS_STREAM, "caught-up")
        assert position.last_sequence == 3
        # The consumer's progress alone (one request, what back-pressure reads) says the same.
        progress = await bus.progress(subjects.JOBS_STREAM, "caught-up")
        assert (progress.pending, progress.ack_pending, progress.ack_floor) == (0, 0, 3)
        assert bus.max_payload >= 64 * 1024

    async def test_the_last_message_of_a_subject_is_its_newest(self, connect: Connect) -> None:
        bus = await connect()
        assert await bus.last_message(subjects.JOBS_STREAM, subject("j1")) is None
        for phase in ("a", "b"):
            await bus.publish(subject("j1"), phase_event("j1", phase))
        await bus.publish(subject("j2"), phase_event("j2", "other"))
        newest = await bus.last_message(subjects.JOBS_STREAM, subject("j1"))
        assert newest is not None
        assert decode(newest).data.phase == "b"
