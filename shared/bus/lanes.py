"""What both `Bus` implementations share: consumer tasks, per-subject lanes and whole batches.

`LaneBus` is the base of `NatsBus` (nats.py) and `MemoryBus` (memory.py). Each subclass fetches
messages its own way (`_consume`) and hands every fetched message to `lane`: one subject's (one
object's) messages run in order, in a lane of their own, through `Delivery` (delivery.py);
different subjects run concurrently. `handle_batch` gives a batch consumer the whole batch at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import structlog

from shared.bus import consumer_health
from shared.bus.consumer_health import Reporter
from shared.bus.delivery import DeliveredMessage, Delivery
from shared.bus.ports import BatchHandler, ConsumerSpec, ConsumerStats, Handler
from shared.messages.envelope import CloudEvent, decode

log = structlog.get_logger()
Pending = Callable[[], Awaitable[int]]  # how many messages wait on the server


class LaneBus:
    def __init__(self, *, name: str) -> None:
        self.service = name.removeprefix("phalanx-")
        self._tasks: list[asyncio.Task[None]] = []
        self._lanes: set[asyncio.Task[None]] = set()  # per-subject handlers of fetched messages
        self._stopping = asyncio.Event()
        # Where each consumer reports whether it keeps up (`/readyz`); set by the service.
        self.health: Reporter | None = None

    async def publish(self, subject: str, event: CloudEvent[Any]) -> None:
        await self.publish_raw(subject, event.to_bytes(), msg_id=event.id)

    async def publish_raw(self, subject: str, payload: bytes, *, msg_id: str) -> None:
        raise NotImplementedError

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

    async def _consume(
        self,
        spec: ConsumerSpec,
        handler: Handler,
        stats: ConsumerStats,
        *,
        batch_handler: BatchHandler | None = None,
    ) -> None:
        raise NotImplementedError

    async def _stop_tasks(self) -> None:
        self._stopping.set()
        running = [*self._tasks, *self._lanes]
        for task in running:
            task.cancel()
        for task in running:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()

    def watch_health(
        self, spec: ConsumerSpec, stats: ConsumerStats, lanes: dict[str, deque[Any]], pending: Pending
    ) -> asyncio.Task[None]:
        """Report whether the consumer keeps up (consumer_health.py), until the task is cancelled."""

        def in_flight() -> int:
            return sum(len(lane) for lane in lanes.values())

        return asyncio.create_task(
            consumer_health.watch(spec, stats.progress, in_flight, pending, lambda: self.health)
        )

    def lane(
        self,
        delivery: Delivery,
        msg: DeliveredMessage,
        lanes: dict[str, deque[Any]],
        done: Callable[[], None],
    ) -> None:
        """Queue `msg` behind its subject's earlier messages, or start a lane for it."""
        lane = lanes.get(msg.subject)
        if lane is not None:
            lane.append(msg)
            return
        lanes[msg.subject] = deque([msg])
        task = asyncio.create_task(self._run_lane(delivery, msg.subject, lanes, done))
        self._lanes.add(task)
        task.add_done_callback(self._lanes.discard)

    @staticmethod
    async def _run_lane(
        delivery: Delivery, subject: str, lanes: dict[str, deque[Any]], done: Callable[[], None]
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
                    done()
        finally:
            del lanes[subject]

    @staticmethod
    async def handle_batch(
        spec: ConsumerSpec, handler: BatchHandler, batch: Sequence[DeliveredMessage], stats: ConsumerStats
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
