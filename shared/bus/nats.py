"""JetStream adapter: streams, publishing with Nats-Msg-Id, durable pull consumers with ack policy.

Every service connects through `NatsBus`, the JetStream implementation of the `Bus` port
(ports.py). `ensure_streams` creates the streams idempotently at start.
Every stream has age and size limits and discards its oldest messages at them (AUDIT by its own
settings; CLUSTER, JOBS and DECISIONS also keep a bounded number per object). `publish` sets
`Nats-Msg-Id` to the event id, so JetStream drops a duplicate inside its window; the consumer's
idempotency remains the real guarantee. `consume` runs a durable pull consumer: messages
of one subject (one object) are handled in order, in a lane of their own, different subjects
concurrently; delivery.py says how one message is handled, retried in place (so order holds) and
dead-lettered. Messages waiting in a lane are kept alive with in-progress acknowledgements.
`pipeline` publishes without waiting for each ack (publish_pipeline.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections import deque
from collections.abc import Sequence

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

from shared.bus.credentials import connect_options
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
from shared.bus.publish_pipeline import ACK_TIMEOUT_SECONDS, Pipeline
from shared.config import NatsSettings
from shared.messages import catalog as _catalog  # noqa: F401  (registers every event type)
from shared.messages import subjects

log = structlog.get_logger()


class NatsBus(LaneBus):
    """The `Bus` port over one NATS connection and its JetStream context, shared by a service's
    publishers and consumers."""

    def __init__(self, nc: Client, js: JetStreamContext, settings: NatsSettings, *, name: str = "") -> None:
        super().__init__(name=name)
        self.nc = nc
        self.js = js
        self.settings = settings

    @classmethod
    async def connect(cls, settings: NatsSettings, *, name: str) -> NatsBus:
        nc = await nats.connect(
            **connect_options(settings),
            name=name,
            max_reconnect_attempts=-1,
            reconnect_time_wait=0.5,
            connect_timeout=5,
        )
        return cls(nc, nc.jetstream(timeout=ACK_TIMEOUT_SECONDS), settings, name=name)

    @property
    def max_payload(self) -> int:
        """The largest message the server takes (its `max_payload`)."""
        return int(self.nc.max_payload)

    async def close(self) -> None:
        await self._stop_tasks()
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
                num_replicas=self.settings.replicas,
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

    async def position(self, stream: str, durable: str) -> ConsumerPosition:
        last = (await self.js.stream_info(stream)).state.last_seq
        progress = await self.progress(stream, durable)
        return ConsumerPosition(last_sequence=last, **dataclasses.asdict(progress))

    async def progress(self, stream: str, durable: str) -> ConsumerProgress:
        consumer = await self.js.consumer_info(stream, durable)
        floor = (consumer.ack_floor.stream_seq if consumer.ack_floor else 0) or 0
        return ConsumerProgress(
            pending=int(consumer.num_pending or 0),
            ack_pending=int(consumer.num_ack_pending or 0),
            ack_floor=floor,
        )

    async def last_message(self, stream: str, subject: str) -> bytes | None:
        try:
            newest = await self.js.get_last_msg(stream, subject)
        except NotFoundError:
            return None
        return newest.data

    def pipeline(self, *, ack_timeout: float = ACK_TIMEOUT_SECONDS) -> Pipeline:
        return Pipeline(self.js, ack_timeout=ack_timeout)

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

        health = self.watch_health(spec, stats, lanes, pending)
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
                if batch_handler is not None and await self.handle_batch(spec, batch_handler, batch, stats):
                    continue
                # One object's messages (one subject) run in order, in a lane of their own; different
                # objects run concurrently, and the next fetch does not wait for this batch to finish.
                for msg in batch:
                    await slots.acquire()
                    self.lane(delivery, msg, lanes, slots.release)
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
