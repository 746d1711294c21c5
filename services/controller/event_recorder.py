"""Shell: Kubernetes Events written as client-go's event broadcaster writes them: off the
critical path, bounded, correlated.

Events are best effort, and a bind must never wait for one (nor for a connection an Event holds):
- `soon` queues the event and returns. The queue holds at most `MAX_QUEUED` events (client-go's
  broadcaster queue, 1,000); past that an event is dropped and counted
  (`phalanx_controller_events_dropped_total{reason="queue_full"}`), as client-go drops it when
  its channel is full. A Scheduled Event per bound pod is written as long as the API keeps up.
- `WRITERS` writers take the events in order, each the events of its share of the objects (so
  one object's events are written one after another, as client-go's sink goroutine writes
  them, and the correlator's count for it is never raced), on the client they were given: the
  controller hands them a client of their own (app.py), so an Event never takes a connection a
  create or a bind is waiting for. One writer alone waits out each POST's round trip, and on a
  busy API server dropped a third of S2's Scheduled Events while the server had time to spare.
- Each event first goes through the correlator (core/event_correlator.py, pure): the spam filter
  (dropped, counted as `reason="spam"`), the aggregation of similar events, and the series: a
  repeat is a merge patch of `count`, `lastTimestamp` and `message` on the Event already written.
`record` writes at once, through the same correlator, for the few callers that await an Event
(a Job's or a Queue's, an eviction's).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog
from kubernetes_asyncio import client
from prometheus_client import Counter

from services.controller.core.event_correlator import Decision, EventBook, EventFacts
from shared.kube.client import ApiError, request
from shared.kube.kinds import KINDS
from shared.volcano.objects import KubeObject

log = structlog.get_logger()
Json = dict[str, Any]

MAX_QUEUED = 1000  # client-go's maxQueuedEvents, shared out among the writers
WRITERS = 4  # the event client's connections (app.py)
EVENTS_DROPPED = Counter(
    "phalanx_controller_events_dropped",
    "Kubernetes Events not written: the queue was full (the API did not keep up), or the spam "
    "filter cut a flood on one object off.",
    ["reason"],
)


@dataclass(frozen=True, slots=True)
class _Queued:
    involved: Json
    facts: EventFacts
    stamp: str  # when it happened, not when it is written


class EventRecorder:
    def __init__(
        self,
        api: client.ApiClient,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        max_queued: int = MAX_QUEUED,
        writers: int = WRITERS,
    ) -> None:
        self._api = api
        self._book = EventBook()
        self._monotonic = monotonic
        self._queues: list[asyncio.Queue[_Queued]] = [
            asyncio.Queue(maxsize=max(1, max_queued // writers)) for _ in range(writers)
        ]
        self._writers: dict[int, asyncio.Task[None]] = {}

    def soon(self, involved: Json, *, type_: str, reason: str, message: str, component: str) -> None:
        """Queue an Event and return at once; dropped (and counted) when the queue is full."""
        queued = _Queued(_reference(involved), _facts(involved, type_, reason, message, component), _now())
        index = hash(queued.facts.involved) % len(self._queues)
        try:
            self._queues[index].put_nowait(queued)
        except asyncio.QueueFull:
            EVENTS_DROPPED.labels("queue_full").inc()
            return
        writer = self._writers.get(index)
        if writer is None or writer.done():
            self._writers[index] = asyncio.create_task(self._write_queued(index), name=f"events-{index}")

    async def flush(self) -> None:
        """Wait until every queued Event is written (or given up)."""
        for queue in self._queues:
            await queue.join()

    async def close(self) -> None:
        for writer in self._writers.values():
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await writer

    async def _write_queued(self, index: int) -> None:
        queue = self._queues[index]
        while True:
            queued = await queue.get()
            try:
                await self._write(queued.involved, queued.facts, queued.stamp)
            except Exception as error:  # best effort: the next event is still written
                log.warning("event not recorded", reason=queued.facts.reason, error=str(error))
            finally:
                queue.task_done()

    async def record(self, involved: Json, *, type_: str, reason: str, message: str, component: str) -> None:
        """An Event on `involved` (its apiVersion, kind and metadata name/namespace/uid), now."""
        await self._write(involved, _facts(involved, type_, reason, message, component), _now())

    async def _write(self, involved: Json, facts: EventFacts, stamp: str) -> None:
        now = self._monotonic()
        decision = self._book.decide(facts, now)
        namespace = KubeObject(involved).namespace or "default"
        try:
            if decision.action == "drop":
                EVENTS_DROPPED.labels("spam").inc()
                return
            if decision.action == "update" and await self._count_up(namespace, decision, stamp):
                self._book.written(decision, decision.name, now)
                return
            body = _event(involved, facts, decision.message, stamp)
            created = await request(self._api, "POST", KINDS["Event"].collection(namespace), body=body)
            name = KubeObject(created or {}).name
            self._book.written(Decision("create", 1, "", decision.message, decision.series), name, now)
        except ApiError as error:
            log.warning("event not recorded", reason=facts.reason, error=str(error))

    async def _count_up(self, namespace: str, decision: Decision, stamp: str) -> bool:
        """Patch the count on the Event written before; False when it is gone (start anew)."""
        patch = {"count": decision.count, "lastTimestamp": stamp, "message": decision.message}
        try:
            await request(
                self._api,
                "PATCH",
                KINDS["Event"].item(namespace, decision.name),
                body=patch,
                content_type="application/merge-patch+json",
            )
        except ApiError as error:
            if error.status != 404:
                raise
            self._book.forget(decision)  # the Event expired or was deleted
            return False
        return True


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _facts(involved: Json, type_: str, reason: str, message: str, component: str) -> EventFacts:
    obj = KubeObject(involved)
    namespace = obj.namespace or "default"
    return EventFacts(obj.uid or f"{namespace}/{obj.name}", type_, reason, message, component)


def _reference(involved: Json) -> Json:
    """What an Event needs of its object, so the queue holds no whole pod."""
    obj = KubeObject(involved)
    return {
        "apiVersion": involved.get("apiVersion"),
        "kind": involved.get("kind"),
        "metadata": {"name": obj.name, "namespace": obj.namespace, "uid": obj.uid},
    }


def _event(involved: Json, facts: EventFacts, message: str, stamp: str) -> Json:
    obj = KubeObject(involved)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{obj.name}.", "namespace": obj.namespace or "default"},
        "involvedObject": {
            "apiVersion": involved.get("apiVersion"),
            "kind": involved.get("kind"),
            "name": obj.name,
            "namespace": obj.namespace or None,  # cluster-scoped objects have none
            "uid": obj.uid,
        },
        "type": facts.type,
        "reason": facts.reason,
        "message": message,
        "source": {"component": facts.component},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
