"""Shell: Kubernetes Events written as client-go's event recorder writes them, aggregated and limited.

Every Event the controller records (kube_writes.py `record_event`) goes through here:
- the same event again (same object, type, reason, message and source) within `AGGREGATE_SECONDS`
  updates the Event already written, its `count` and `lastTimestamp`, instead of adding another,
  as client-go's EventCorrelator does; `kubectl describe` shows "x3 over 2m";
- each object and source get a token bucket (`BURST` events, then one per `REFILL_SECONDS`), as
  client-go's spam filter: a gang that waits for an hour cannot flood the API with Events.
`EventBook` decides (plain data, a clock passed in); `EventRecorder` writes. The book is in
memory: after a restart, the first repeat of an event creates a new Event, as in client-go.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import structlog
from kubernetes_asyncio import client

from shared.kube.client import ApiError, request
from shared.kube.kinds import KINDS

log = structlog.get_logger()
Json = dict[str, Any]

AGGREGATE_SECONDS = 600.0  # client-go's event cache keeps a series this long
BURST = 25  # client-go's spam filter: events per object and source at once ...
REFILL_SECONDS = 300.0  # ... then one more every five minutes
REMEMBERED = 4096  # series and buckets kept; the least recently used are forgotten

Key = tuple[str, str, str, str, str]  # (involved uid or name, type, reason, message, component)


@dataclass(slots=True)
class _Series:
    namespace: str
    name: str  # the Event object's name, once written
    count: int
    last: float


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


@dataclass(frozen=True, slots=True)
class Decision:
    action: Literal["create", "update", "drop"]
    count: int = 1
    name: str = ""  # the Event to update


class EventBook:
    """Which write an event needs: a new Event, a count on the one written, or none (spam)."""

    def __init__(self) -> None:
        self._series: OrderedDict[Key, _Series] = OrderedDict()
        self._buckets: OrderedDict[tuple[str, str], _Bucket] = OrderedDict()

    def decide(self, key: Key, now: float) -> Decision:
        if not self._take_token((key[0], key[4]), now):
            return Decision("drop")
        series = self._series.get(key)
        if series is not None and series.name and now - series.last < AGGREGATE_SECONDS:
            self._series.move_to_end(key)
            return Decision("update", series.count + 1, series.name)
        return Decision("create")

    def written(self, key: Key, namespace: str, name: str, count: int, now: float) -> None:
        self._series[key] = _Series(namespace, name, count, now)
        self._series.move_to_end(key)
        while len(self._series) > REMEMBERED:
            self._series.popitem(last=False)

    def forget(self, key: Key) -> None:
        self._series.pop(key, None)

    def _take_token(self, source: tuple[str, str], now: float) -> bool:
        bucket = self._buckets.get(source)
        if bucket is None:
            bucket = self._buckets[source] = _Bucket(float(BURST), now)
            while len(self._buckets) > REMEMBERED:
                self._buckets.popitem(last=False)
        self._buckets.move_to_end(source)
        bucket.tokens = min(float(BURST), bucket.tokens + (now - bucket.at) / REFILL_SECONDS)
        bucket.at = now
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True


class EventRecorder:
    def __init__(self, api: client.ApiClient, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._api = api
        self._book = EventBook()
        self._monotonic = monotonic
        self._pending: set[asyncio.Task[None]] = set()

    def soon(self, involved: Json, *, type_: str, reason: str, message: str, component: str) -> None:
        """Record in the background: Events are best effort, and a bind must not wait for its
        Event's write (the API's write budget goes to the binds first)."""
        task = asyncio.create_task(
            self.record(involved, type_=type_, reason=reason, message=message, component=component)
        )
        self._pending.add(task)  # held until done: the loop keeps only weak references to tasks
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("event not recorded", error=str(task.exception()))

    async def record(self, involved: Json, *, type_: str, reason: str, message: str, component: str) -> None:
        """An Event on `involved` (its apiVersion, kind and metadata name/namespace/uid)."""
        meta = involved.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        key: Key = (meta.get("uid") or f"{namespace}/{meta.get('name')}", type_, reason, message, component)
        now = self._monotonic()
        decision = self._book.decide(key, now)
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            if decision.action == "drop":
                log.debug("event dropped by the spam filter", reason=reason, object=meta.get("name"))
                return
            if decision.action == "update":
                patch = {"count": decision.count, "lastTimestamp": stamp}
                try:
                    await request(
                        self._api,
                        "PATCH",
                        KINDS["Event"].item(namespace, decision.name),
                        body=patch,
                        content_type="application/merge-patch+json",
                    )
                    self._book.written(key, namespace, decision.name, decision.count, now)
                    return
                except ApiError as error:
                    if error.status != 404:
                        raise
                    self._book.forget(key)  # the Event expired or was deleted: start a new one
            body = _event(involved, type_, reason, message, component, stamp)
            created = await request(self._api, "POST", KINDS["Event"].collection(namespace), body=body)
            name = ((created or {}).get("metadata") or {}).get("name") or ""
            self._book.written(key, namespace, name, 1, now)
        except ApiError as error:
            log.warning("event not recorded", reason=reason, error=str(error))


def _event(involved: Json, type_: str, reason: str, message: str, component: str, stamp: str) -> Json:
    meta = involved.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta.get('name')}.", "namespace": meta.get("namespace") or "default"},
        "involvedObject": {
            "apiVersion": involved.get("apiVersion"),
            "kind": involved.get("kind"),
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
        },
        "type": type_,
        "reason": reason,
        "message": message,
        "source": {"component": component},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
