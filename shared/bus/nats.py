"""JetStream adapter: streams, publishing with Nats-Msg-Id, durable pull consumers with ack policy.

Every service connects through `Bus`. `ensure_streams` creates the streams idempotently at start.
Every stream has age and size limits and discards its oldest messages at them (AUDIT by its own
settings; CLUSTER, JOBS and DECISIONS also keep a bounded number per object). `publish` sets
`Nats-Msg-Id` to the event id, so JetStream drops a duplicate inside its window; the consumer's
idempotency remains the real guarantee. `consume` runs a durable pull consumer: messages
of one subject (one object) are handled in order, in a lane of their own, different subjects
concurrently; delivery.py says how one message is handled, retried in place (so order holds) and
dead-lettered. Messages waiting in a lane are kept alive with in-progress acknowledgements.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import nats
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    DiscardPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import BadRequestError, NotFoundError

from shared.bus import consumer_health
from shared.bus.consumer_health import Progress, Reporter
from shared.bus.credentials import connect_options
from shared.bus.delivery import MSG_ID, Delivery
from shared.config import NatsSettings
from shared.messages import catalog as _catalog  # noqa: F401  (registers every event type)
from shared.messages import subjects
from shared.messages.envelope import CloudEvent, decode

log = structlog.get_logger()

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


class Pipeline:
    """Publishes without waiting for each ack: messages go out in call order, acks are checked as
    they arrive, and `drain` waits for the rest. A failed ack raises on the next call."""

    def __init__(self, js: JetStreamContext) -> None:
        self._js = js
        self._inflight: list[asyncio.Future[Any]] = []

    async def send(self, subject: str, payload: bytes, msg_id: str) -> None:
        self._inflight.append(await self._js.publish_async(subject, payload, headers={MSG_ID: msg_id}))
        if len(self._inflight) >= 512:
            self._reap()

    def _reap(self) -> None:
        still: list[asyncio.Future[Any]] = []
        for future in self._inflight:
            if not future.done():
                still.append(future)
            elif future.exception() is not None:
                raise future.exception()  # type: ignore[misc]
        self._inflight = still

    async def drain(self) -> None:
        futures, self._inflight = self._inflight, []
        for result in await asyncio.gather(*futures, return_exceptions=True):
            if isinstance(result, BaseException):
                raise result


class Bus:
    """One NATS connection and its JetStream context, shared by a service's publishers and consumers."""

    def __init__(self, nc: Client, js: JetStreamContext, settings: NatsSettings, *, name: str = "") -> None:
        self.service = name.removeprefix("phalanx-")
        self.nc = nc
        self.js = js
        self.settings = settings
        self._tasks: list[asyncio.Task[None]] = []
        self._lanes: set[asyncio.Task[None]] = set()  # per-subject handlers of fetched messages
        self._stopping = asyncio.Event()
        # Where each consumer reports whether it keeps up (`/readyz`); set by the service.
        self.health: Reporter | None = None

    @classmethod
    async def connect(cls, settings: NatsSettings, *, name: str) -> Bus:
        nc = await nats.connect(
            **connect_options(settings),
            name=name,
            max_reconnect_attempts=-1,
            reconnect_time_wait=0.5,
            connect_timeout=5,
        )
        return cls(nc, nc.jetstream(timeout=10), settings, name=name)

    async def close(self) -> None:
        self._stopping.set()
        running = [*self._tasks, *self._lanes]
        for task in running:
            task.cancel()
        for task in running:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        with contextlib.suppress(Exception):
            await self.nc.flush(timeout=2)
        with contextlib.suppress(Exception):
            await self.nc.close()

    async def ensure_streams(self) -> None:
        """Create (or bring up to date) every stream; safe to call from every service at start."""
        if not self.settings.manage_streams:
            await self.await_streams()
            return
        for name, subject in subjects.STREAM_SUBJECTS.items():
            config = StreamConfig(
                name=name,
                subjects=[subject],
                storage=StorageType.FILE,
                retention=RetentionPolicy.LIMITS,
                discard=DiscardPolicy.OLD,
                duplicate_window=120.0,
            )
            if name == subjects.AUDIT_STREAM:
                config.max_age = self.settings.audit_max_age_hours * 3600
                config.max_bytes = self.settings.audit_max_bytes
            else:
                # Every relist republishes the whole cluster; the newest messages of each object
                # are what level-triggered consumers need.
                config.max_age = self.settings.stream_max_age_hours * 3600
                config.max_bytes = self.settings.stream_max_bytes
                if name != subjects.DEADLETTER_STREAM:  # one subject per consumer there
                    config.max_msgs_per_subject = self.settings.max_msgs_per_object
            try:
                await self.js.add_stream(config)
            except BadRequestError:
                await self.js.update_stream(config)

    async def await_streams(self, *, poll: float = 1.0) -> None:
        """Wait until every stream exists: a service whose identity may not create streams starts
        once the bootstrap identity (`phalanx up`, the chart's streams hook) has created them."""
        for name in subjects.STREAM_SUBJECTS:
            while True:
                try:
                    await self.js.stream_info(name)
                    break
                except NotFoundError:
                    log.info("waiting for the bootstrap to create a stream", stream=name)
                    await asyncio.sleep(poll)

    async def publish(self, subject: str, event: CloudEvent[Any]) -> None:
        await self.publish_raw(subject, event.to_bytes(), msg_id=event.id)

    async def publish_raw(self, subject: str, payload: bytes, *, msg_id: str) -> None:
        await self.js.publish(subject, payload, headers={MSG_ID: msg_id})

    async def publish_raw_quick(self, subject: str, payload: bytes, msg_id: str) -> None:
        """Publish and wait for the ack without holding the caller's request path in a queue."""
        await (await self.js.publish_async(subject, payload, headers={MSG_ID: msg_id}))

    async def publish_many(self, items: Sequence[tuple[str, bytes, str]]) -> None:
        """Publish (subject, payload, msg_id) triples in order, waiting for every ack at the end.

        Pipelining keeps one round trip per batch instead of one per message; order on the wire,
        and so in the stream, is the order given.
        """
        futures = [
            await self.js.publish_async(subject, payload, headers={MSG_ID: msg_id})
            for subject, payload, msg_id in items
        ]
        for ack in await asyncio.gather(*futures, return_exceptions=True):
            if isinstance(ack, BaseException):
                raise ack

    def pipeline(self) -> Pipeline:
        return Pipeline(self.js)

    def consume(self, spec: ConsumerSpec, handler: Handler) -> ConsumerStats:
        """Start consuming in the background; returns live counters. Stopped by `close()`."""
        stats = ConsumerStats()
        self._tasks.append(asyncio.create_task(self._consume(spec, handler, stats)))
        return stats

    def consume_batches(self, spec: ConsumerSpec, handler: BatchHandler) -> ConsumerStats:
        """Like `consume`, but hands each fetched batch to `handler` at once (one transaction).

        When a batch fails, its messages are retried one by one through the per-message path, so
        one poison message is dead-lettered alone and the rest still land.
        """
        stats = ConsumerStats()

        async def one(event: CloudEvent[Any]) -> None:
            await handler([event])

        self._tasks.append(asyncio.create_task(self._consume(spec, one, stats, batch_handler=handler)))
        return stats

    async def _subscribe(self, spec: ConsumerSpec) -> JetStreamContext.PullSubscription:
        config = ConsumerConfig(
            durable_name=spec.durable,
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=spec.ack_wait,
            # No server-side limit: the server would drop a message silently at its limit, so
            # we decide when a message is dead-lettered, and record why (delivery.py).
            max_deliver=-1,
            deliver_policy=DeliverPolicy.NEW if spec.deliver_new_only else DeliverPolicy.ALL,
            max_ack_pending=max(spec.batch * 4, 1024),
        )
        if len(spec.filter_subjects) == 1:
            config.filter_subject = spec.filter_subjects[0]
        else:
            config.filter_subjects = list(spec.filter_subjects)
        # CONSUMER.CREATE creates a durable or updates it in place, so a restart resumes it.
        await self.js.add_consumer(spec.stream, config)
        return await self.js.pull_subscribe_bind(spec.durable, stream=spec.stream)

    async def _consume(
        self,
        spec: ConsumerSpec,
        handler: Handler,
        stats: ConsumerStats,
        *,
        batch_handler: BatchHandler | None = None,
    ) -> None:
        subscription = await self._subscribe(spec)
        slots = asyncio.Semaphore(spec.in_flight)
        lanes: dict[str, deque[Msg]] = {}
        delivery = Delivery(self.js, spec, handler, stats, service=self.service)
        keeper = asyncio.create_task(self._keep_alive(spec, lanes))

        async def pending() -> int:
            return int((await subscription.consumer_info()).num_pending or 0)

        in_flight = lambda: sum(len(lane) for lane in lanes.values())  # noqa: E731
        health = asyncio.create_task(
            consumer_health.watch(spec, stats.progress, in_flight, pending, lambda: self.health)
        )
        try:
            while not self._stopping.is_set():
                try:
                    batch = await subscription.fetch(spec.batch, timeout=1.0)
                except (TimeoutError, nats.errors.TimeoutError):
                    continue
                except Exception as error:  # reconnecting: keep the loop alive
                    if self._stopping.is_set():
                        return
                    log.warning("fetch failed", durable=spec.durable, error=str(error))
                    await asyncio.sleep(0.5)
                    subscription = await self._resubscribe_if_lost(spec) or subscription
                    continue
                if not lanes:
                    stats.progress.resumed()
                if batch_handler is not None and await self._handle_batch(spec, batch_handler, batch, stats):
                    continue
                # One object's messages (one subject) run in order, in a lane of their own; different
                # objects run concurrently, and the next fetch does not wait for this batch to finish.
                for msg in batch:
                    await slots.acquire()
                    lane = lanes.get(msg.subject)
                    if lane is not None:
                        lane.append(msg)
                        continue
                    lanes[msg.subject] = deque([msg])
                    task = asyncio.create_task(self._run_lane(delivery, msg.subject, lanes, slots))
                    self._lanes.add(task)
                    task.add_done_callback(self._lanes.discard)
        finally:
            keeper.cancel()
            health.cancel()

    async def _resubscribe_if_lost(self, spec: ConsumerSpec) -> JetStreamContext.PullSubscription | None:
        """After a failed fetch: if the durable is gone (JetStream came back without its store, or
        an operator deleted it), wait for the streams and make the durable again. None while it
        exists or the server cannot be asked (still reconnecting: the next fetch will tell)."""
        try:
            await self.js.consumer_info(spec.stream, spec.durable)
            return None
        except NotFoundError:
            log.warning("consumer lost with its stream; making it again", durable=spec.durable)
        except Exception:
            return None
        try:
            await self.ensure_streams()  # waits for the bootstrap where this identity may not create
            return await self._subscribe(spec)
        except Exception as error:
            log.warning("consumer not made again yet", durable=spec.durable, error=str(error))
            return None

    @staticmethod
    async def _keep_alive(spec: ConsumerSpec, lanes: dict[str, deque[Msg]]) -> None:
        """Tell the server that messages waiting in a lane (behind a slow or retried one) are
        still being worked on, so it does not redeliver them meanwhile."""
        while True:
            await asyncio.sleep(spec.ack_wait / 3)
            for lane in list(lanes.values()):
                for msg in list(lane):
                    with contextlib.suppress(Exception):
                        await msg.in_progress()

    async def _run_lane(
        self, delivery: Delivery, subject: str, lanes: dict[str, deque[Msg]], slots: asyncio.Semaphore
    ) -> None:
        lane = lanes[subject]
        try:
            while lane:
                # The head stays queued while handled (and retried), so later arrivals line up
                # behind it and the object's order holds.
                try:
                    await delivery.handle(lane[0])
                finally:
                    lane.popleft()
                    slots.release()
        finally:
            del lanes[subject]

    async def _handle_batch(
        self, spec: ConsumerSpec, handler: BatchHandler, batch: list[Msg], stats: ConsumerStats
    ) -> bool:
        """True when the whole batch was handled and acknowledged."""
        try:
            events = [decode(msg.data) for msg in batch]
            await asyncio.wait_for(handler(events), spec.handler_timeout)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.warning("batch failed; retrying one by one", error=f"{type(error).__name__}: {error}")
            return False
        for msg in batch:
            await msg.ack()
        stats.handled += len(batch)
        stats.progress.finished()
        return True
