"""The bus as a port: what the services call on it, whatever carries the messages.

`Bus` is the protocol every shell and composition root is typed against. Two implementations pass
one set of contract tests (tests/contracts/bus.py): `NatsBus` (nats.py, JetStream, what runs) and
`MemoryBus` (memory.py, an in-process twin for unit tests). Both keep the same promises:

- `publish*` store a message once per message id within the duplicate window (Nats-Msg-Id);
- a durable consumer sees one subject's (one object's) messages in order, different subjects
  concurrently; a handler that returns acks, one that raises `PermanentError` dead-letters (term),
  any other failure is retried with back-off up to `max_deliver` attempts, then dead-lettered;
  an event type this version does not know is handed back (nak) for a later redelivery;
- a durable consumer resumes after its last acknowledged message when consumed again.

Nothing here imports NATS: a module that only needs the port does not pull the client in.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from shared.bus.consumer_health import Progress, Reporter
from shared.messages.envelope import CloudEvent

Handler = Callable[[CloudEvent[Any]], Awaitable[None]]
BatchHandler = Callable[[list[CloudEvent[Any]]], Awaitable[None]]

DEFAULT_BACKOFF = (0.2, 1.0, 5.0, 15.0, 30.0)


@dataclass(frozen=True)
class ConsumerSpec:
    """A durable pull consumer: which stream, which subjects, and how hard to retry."""

    stream: str
    durable: str
    filter_subjects: Sequence[str]
    max_deliver: int = 8
    backoff: Sequence[float] = DEFAULT_BACKOFF
    batch: int = 256
    ack_wait: float = 30.0
    # A handler still running after this is cancelled and retried (and, at the limit, recorded).
    # Its message is kept alive meanwhile, so this may exceed ack_wait.
    handler_timeout: float = 120.0
    deliver_new_only: bool = False
    # Messages fetched and not yet finished. Fetching goes on while fewer are in flight, so a
    # handler that waits (on a lock, on the API) holds back its own object's messages only.
    in_flight: int = 1024
    # When the consumer stops being ready (consumer_health.py): no message finished for this long
    # while some are in progress, more than this many waiting on the server, or this many dead
    # letters within `dead_letter_window` seconds. Checked every `health_every` seconds.
    stuck_after: float = 300.0
    max_lag: int = 10_000
    dead_letter_loop: int = 20
    dead_letter_window: float = 60.0
    health_every: float = 5.0


@dataclass
class ConsumerStats:
    handled: int = 0
    retried: int = 0
    dead_lettered: int = 0
    errors: list[str] = field(default_factory=list)
    progress: Progress = field(default_factory=Progress)


@dataclass(frozen=True, kw_only=True)
class ConsumerProgress:
    """How far a durable consumer has worked its stream (the scheduler's back-pressure reads it):
    one request to the server, the consumer's own figures."""

    pending: int  # not yet delivered
    ack_pending: int  # delivered, not yet acknowledged
    ack_floor: int  # every message up to this one is acknowledged


@dataclass(frozen=True, kw_only=True)
class ConsumerPosition(ConsumerProgress):
    """Where a durable consumer stands in its stream (the scheduler's ingest watermark reads it):
    its progress and the stream's newest message, a second request."""

    last_sequence: int  # the stream's newest message


class PublishPipeline(Protocol):
    """Publishes in call order without waiting for each ack; `drain` waits for the rest."""

    async def send(self, subject: str, payload: bytes, msg_id: str) -> None: ...

    def check(self) -> None: ...

    async def drain(self) -> None: ...


class Bus(Protocol):
    """What a service does with the bus. `health` is where consumers report whether they keep up."""

    health: Reporter | None

    @property
    def max_payload(self) -> int: ...

    async def ensure_streams(self) -> None: ...

    async def close(self) -> None: ...

    async def publish(self, subject: str, event: CloudEvent[Any]) -> None: ...

    async def publish_raw(self, subject: str, payload: bytes, *, msg_id: str) -> None: ...

    async def publish_raw_quick(self, subject: str, payload: bytes, msg_id: str) -> None: ...

    async def publish_many(self, items: Sequence[tuple[str, bytes, str]]) -> None: ...

    def pipeline(self) -> PublishPipeline: ...

    def consume(self, spec: ConsumerSpec, handler: Handler) -> ConsumerStats: ...

    def consume_batches(self, spec: ConsumerSpec, handler: BatchHandler) -> ConsumerStats: ...

    async def position(self, stream: str, durable: str) -> ConsumerPosition: ...

    async def progress(self, stream: str, durable: str) -> ConsumerProgress: ...

    async def last_message(self, stream: str, subject: str) -> bytes | None:
        """The payload of the newest message on `subject` in `stream`; None when it has none."""
        ...
