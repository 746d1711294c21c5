"""The in-memory twin of the bus: the `Bus` port (ports.py) without a server, for unit tests.

A `MemoryBroker` stands in for the JetStream server: its streams (the same names and subjects as
`subjects.STREAM_SUBJECTS`), a duplicate window per stream keyed by message id, and the durable
consumers' positions. A `MemoryBus` is one service's connection to it; several may share a broker,
and a durable consumed again on a new connection resumes after its last acknowledged message, with
the messages that were in progress on the closed one delivered again.

Delivery is the NATS bus's own (delivery.py): one subject's messages run in order in a lane of their
own, a handler's failure is retried in place with back-off up to `max_deliver`, `PermanentError`
dead-letters, an unknown event type is handed back (nak) and delivered again after its delay. The
contract tests (tests/contracts/bus.py) hold both implementations to the same behaviour.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace

from shared.bus.delivery import MSG_ID, Delivery
from shared.bus.lanes import LaneBus
from shared.bus.ports import (
    BatchHandler,
    ConsumerPosition,
    ConsumerProgress,
    ConsumerSpec,
    ConsumerStats,
    Handler,
)
from shared.messages import catalog as _catalog  # noqa: F401  (registers every event type)
from shared.messages import subjects

DUPLICATE_WINDOW = 120.0  # seconds, as the NATS bus configures its streams
MAX_PAYLOAD = 1024 * 1024  # a NATS server's default


def matches(pattern: str, subject: str) -> bool:
    """NATS subject matching: `*` is one token, a final `>` one or more."""
    wanted, got = pattern.split("."), subject.split(".")
    for index, token in enumerate(wanted):
        if token == ">":
            return len(got) > index
        if index >= len(got) or (token != "*" and token != got[index]):
            return False
    return len(got) == len(wanted)


@dataclass(frozen=True)
class StoredMessage:
    sequence: int
    subject: str
    data: bytes
    headers: dict[str, str]


@dataclass
class Durable:
    """A durable consumer's position: what it was handed, what it still owes an outcome for."""

    stream: str
    filters: Sequence[str]
    next_sequence: int = 1
    deliveries: dict[int, int] = field(default_factory=dict)  # sequence -> times delivered
    outstanding: set[int] = field(default_factory=set)  # delivered, no outcome yet
    again: deque[int] = field(default_factory=deque)  # to deliver again (nak, a closed connection)

    def wants(self, stored: StoredMessage) -> bool:
        return any(matches(pattern, stored.subject) for pattern in self.filters)


class MemoryBroker:
    """The streams, the duplicate windows and the durables that `MemoryBus` connections share."""

    def __init__(
        self, *, duplicate_window: float = DUPLICATE_WINDOW, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.streams: dict[str, list[StoredMessage]] = {name: [] for name in subjects.STREAM_SUBJECTS}
        self.durables: dict[tuple[str, str], Durable] = {}
        self._seen: dict[str, dict[str, float]] = {name: {} for name in subjects.STREAM_SUBJECTS}
        self._window = duplicate_window
        self._clock = clock
        self._arrived: set[asyncio.Event] = set()

    def store(self, subject: str, data: bytes, headers: dict[str, str]) -> None:
        stream = next((n for n, p in subjects.STREAM_SUBJECTS.items() if matches(p, subject)), None)
        if stream is None:
            raise LookupError(f"no stream takes subject {subject!r}")
        msg_id, now = headers.get(MSG_ID), self._clock()
        seen = self._seen[stream]
        if msg_id is not None:
            if msg_id in seen and now - seen[msg_id] < self._window:
                return  # a duplicate inside the window: stored once, as JetStream does
            seen[msg_id] = now
        messages = self.streams[stream]
        messages.append(StoredMessage(len(messages) + 1, subject, data, dict(headers)))
        self.wake()

    def messages(self, stream: str) -> list[StoredMessage]:
        return list(self.streams[stream])

    def durable(self, spec: ConsumerSpec) -> Durable:
        key = (spec.stream, spec.durable)
        if key not in self.durables:
            start = len(self.streams[spec.stream]) + 1 if spec.deliver_new_only else 1
            self.durables[key] = Durable(spec.stream, tuple(spec.filter_subjects), next_sequence=start)
        return self.durables[key]

    def take(self, durable: Durable, limit: int) -> list[tuple[StoredMessage, int]]:
        """Up to `limit` messages for `durable`, those to deliver again first, each with its count."""
        messages = self.streams[durable.stream]
        taken: list[StoredMessage] = []
        while durable.again and len(taken) < limit:
            taken.append(messages[durable.again.popleft() - 1])
        while durable.next_sequence <= len(messages) and len(taken) < limit:
            stored = messages[durable.next_sequence - 1]
            durable.next_sequence += 1
            if durable.wants(stored):
                taken.append(stored)
        for stored in taken:
            durable.deliveries[stored.sequence] = durable.deliveries.get(stored.sequence, 0) + 1
            durable.outstanding.add(stored.sequence)
        return [(stored, durable.deliveries[stored.sequence]) for stored in taken]

    def pending(self, durable: Durable) -> int:
        waiting = self.streams[durable.stream][durable.next_sequence - 1 :]
        return len(durable.again) + sum(1 for stored in waiting if durable.wants(stored))

    def wake(self) -> None:
        for event in self._arrived:
            event.set()

    async def wait(self, timeout: float) -> None:
        arrived = asyncio.Event()
        self._arrived.add(arrived)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(arrived.wait(), timeout)
        finally:
            self._arrived.discard(arrived)


class MemoryMessage:
    """One delivery of a stored message; its outcome moves the durable as JetStream's would."""

    def __init__(self, broker: MemoryBroker, durable: Durable, stored: StoredMessage, delivered: int) -> None:
        self._broker, self._durable, self._stored = broker, durable, stored
        self.metadata = SimpleNamespace(
            num_delivered=delivered,
            stream=durable.stream,
            sequence=SimpleNamespace(stream=stored.sequence),
        )
        self.outcome: str | None = None

    @property
    def subject(self) -> str:
        return self._stored.subject

    @property
    def data(self) -> bytes:
        return self._stored.data

    async def ack(self) -> None:
        self._settle("ack")

    async def term(self) -> None:
        self._settle("term")

    async def nak(self, delay: float | None = None) -> None:
        self._settle("nak")
        sequence = self._stored.sequence

        def again() -> None:
            self._durable.again.append(sequence)
            self._broker.wake()

        asyncio.get_running_loop().call_later(delay or 0.0, again)

    async def in_progress(self) -> None:
        return None

    def _settle(self, outcome: str) -> None:
        self.outcome = outcome
        self._durable.outstanding.discard(self._stored.sequence)


class _DeadLetters:
    """What `Delivery` publishes dead letters and their audit records through."""

    def __init__(self, broker: MemoryBroker) -> None:
        self._broker = broker

    async def publish(self, subject: str, payload: bytes, *, headers: dict[str, str]) -> None:
        self._broker.store(subject, payload, headers)


class _Pipeline:
    """Publishes at once: there is no ack to wait for."""

    def __init__(self, broker: MemoryBroker) -> None:
        self._broker = broker

    async def send(self, subject: str, payload: bytes, msg_id: str) -> None:
        self._broker.store(subject, payload, {MSG_ID: msg_id})

    def check(self) -> None:
        return None

    async def drain(self) -> None:
        return None


class MemoryBus(LaneBus):
    """One connection to a `MemoryBroker`; implements the `Bus` port."""

    def __init__(
        self, broker: MemoryBroker | None = None, *, name: str = "", max_payload: int = MAX_PAYLOAD
    ) -> None:
        super().__init__(name=name)
        self.broker = broker or MemoryBroker()
        self._max_payload = max_payload
        self._durables: list[Durable] = []

    @property
    def max_payload(self) -> int:
        return self._max_payload

    async def ensure_streams(self) -> None:
        return None  # the broker has every stream from the start

    async def close(self) -> None:
        await self._stop_tasks()
        for durable in self._durables:  # what was in progress here goes to the next connection
            durable.again.extend(sorted(durable.outstanding - set(durable.again)))
            durable.outstanding.clear()

    async def publish_raw(self, subject: str, payload: bytes, *, msg_id: str) -> None:
        self._check_size(payload)
        self.broker.store(subject, payload, {MSG_ID: msg_id})

    async def publish_raw_quick(self, subject: str, payload: bytes, msg_id: str) -> None:
        await self.publish_raw(subject, payload, msg_id=msg_id)

    async def publish_many(self, items: Sequence[tuple[str, bytes, str]]) -> None:
        for subject, payload, msg_id in items:
            await self.publish_raw(subject, payload, msg_id=msg_id)

    def pipeline(self) -> _Pipeline:
        return _Pipeline(self.broker)

    async def position(self, stream: str, durable: str) -> ConsumerPosition:
        progress = await self.progress(stream, durable)
        last = len(self.broker.streams[stream])
        return ConsumerPosition(last_sequence=last, **dataclasses.asdict(progress))

    async def progress(self, stream: str, durable: str) -> ConsumerProgress:
        found = self.broker.durables.get((stream, durable))
        if found is None:
            raise LookupError(f"no consumer {durable} on {stream}")
        unsettled = [*found.outstanding, *found.again]
        floor = min(unsettled) - 1 if unsettled else found.next_sequence - 1
        return ConsumerProgress(
            pending=self.broker.pending(found),
            ack_pending=len(found.outstanding) + len(found.again),
            ack_floor=floor,
        )

    async def last_message(self, stream: str, subject: str) -> bytes | None:
        found = [m for m in self.broker.messages(stream) if m.subject == subject]
        return found[-1].data if found else None

    def _check_size(self, payload: bytes) -> None:
        if len(payload) > self._max_payload:
            raise ValueError(f"message of {len(payload)} bytes exceeds the maximum payload")

    async def _consume(
        self,
        spec: ConsumerSpec,
        handler: Handler,
        stats: ConsumerStats,
        *,
        batch_handler: BatchHandler | None = None,
    ) -> None:
        durable = self.broker.durable(spec)
        self._durables.append(durable)
        delivery = Delivery(_DeadLetters(self.broker), spec, handler, stats, service=self.service)
        lanes: dict[str, deque[MemoryMessage]] = {}

        async def pending() -> int:
            return self.broker.pending(durable)

        health = self.watch_health(spec, stats, lanes, pending)
        try:
            while not self._stopping.is_set():
                room = max(spec.in_flight - sum(len(lane) for lane in lanes.values()), 0)
                taken = self.broker.take(durable, min(spec.batch, room)) if room else []
                if not taken:
                    await self.broker.wait(0.5)
                    continue
                batch = [MemoryMessage(self.broker, durable, stored, count) for stored, count in taken]
                if not lanes:
                    stats.progress.resumed()
                if batch_handler is not None and await self.handle_batch(spec, batch_handler, batch, stats):
                    continue
                for msg in batch:  # one subject's messages in order, in a lane of their own
                    self.lane(delivery, msg, lanes, self.broker.wake)  # wake: room for more in flight
                await asyncio.sleep(0)  # let the lanes start before the next take
        finally:
            health.cancel()
