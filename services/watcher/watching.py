"""Shell: list-then-watch one kind forever, publishing every change to the CLUSTER stream.

A (re)start lists the kind, publishes every object with a relist id and then a `KindResynced`
marker, so consumers drop what vanished while nobody watched; then it watches from the list's
resourceVersion with bookmarks. A 410 Gone, or any broken stream, leads back to a relist:
level-triggered, nothing lost. Publishing is pipelined (publish_async) and awaited before the
resume point moves past it; `resume_point` is what a standby replica that takes the kind over
watches from, skipping the relist (kind_leases.py), so it is moved only past acknowledged events.

No single object stops a kind: every event is kept under the bus's payload limit
(`translate.to_message`), one that still had to be cut to a reference is audited
(`audit.watcher.oversized.*`), and one that cannot be translated at all is logged, audited
(`audit.watcher.skipped.*`), counted and stepped over rather than relisted forever.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Collection
from typing import Any

import structlog
from kubernetes_asyncio import client
from prometheus_client import Counter, Gauge

from services.watcher import translate
from services.watcher.translate import Message
from services.watcher.watched_kinds import WatchedKind
from shared import failpoints, tracing
from shared.bus.ports import Bus
from shared.kube.client import ApiError, request, stream_lines
from shared.messages import subjects
from shared.messages.audit import AuditRecorded, audit_event
from shared.messages.cluster import Change, KindResynced
from shared.messages.envelope import new_event
from shared.volcano.keys import TRACEPARENT
from shared.volcano.objects import KubeObject

log = structlog.get_logger()

SOURCE = translate.SOURCE
PAGE = 2000
BROKEN = Gauge("phalanx_watcher_watch_failures", "Relists in a row that ended in an error.", ["kind"])
RELISTS = Counter(
    "phalanx_watcher_relists",
    "Full lists of a kind: at start, after the resume point expired (410 Gone), or after an error.",
    ["kind", "reason"],
)
WATCH_RESTARTS = Counter(
    "phalanx_watcher_watch_restarts",
    "Watches resumed from the last resourceVersion after the server ended one (its timeout).",
    ["kind"],
)
STEPPED_OVER = Counter(
    "phalanx_watcher_objects_stepped_over_total",
    "Objects published as a reference (oversized) or not at all (skipped).",
    ["kind", "reason"],
)
# Room left under the server's max_payload for the NATS headers (Nats-Msg-Id) and framing.
HEADER_ROOM = 4096
# How often, at most, the watch waits for its publications' acks to move `resume_point`.
CHECKPOINT_SECONDS = 1.0


class KindWatcher:
    def __init__(
        self,
        api: client.ApiClient,
        bus: Bus,
        kind: WatchedKind,
        *,
        scheduler_names: Collection[str],
        watch_timeout: int,
    ) -> None:
        self._api = api
        self._bus = bus
        self._kind = kind
        self.kind = kind.kind
        self._ours = frozenset(scheduler_names)
        self._timeout = watch_timeout
        self.synced = asyncio.Event()
        self.published = 0
        self.skipped = 0  # objects that could not be published at all, since start
        self.failures = 0  # relists in a row that ended in an error (readiness reads it)
        self.last_error = ""
        self.resume_point = ""  # resourceVersion up to which every event is acknowledged by the bus
        self._max_bytes = max(bus.max_payload - HEADER_ROOM, 64 * 1024)

    async def run(self, resume_from: str | None = None) -> None:
        """List and watch forever; from `resume_from` without a list first, when it is given."""
        reason = "start"
        while True:
            try:
                if resume_from:
                    version, resume_from = resume_from, None
                    log.info("resuming a taken-over watch", kind=self._kind.kind, resource_version=version)
                else:
                    RELISTS.labels(self._kind.kind, reason).inc()
                    version = await self._relist()
                    await failpoints.hit("watcher.after_publish_before_watch")
                self.resume_point = version
                self.synced.set()
                self.failures, self.last_error = 0, ""
                BROKEN.labels(self._kind.kind).set(0)
                await self._watch_from(version)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                reason = "expired" if isinstance(error, ApiError) and error.status == 410 else "error"
                self.failures += 1
                self.last_error = f"{type(error).__name__}: {str(error)[:300]}"
                BROKEN.labels(self._kind.kind).set(self.failures)
                log.warning("watch broke; relisting", kind=self._kind.kind, error=self.last_error)
                await asyncio.sleep(1.0)

    async def _relist(self) -> str:
        relist_id = uuid.uuid4().hex[:16]
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            query = [("limit", str(PAGE))] + ([("continue", token)] if token else [])
            page = await request(self._api, "GET", self._kind.path, query=query)
            items.extend(page.get("items") or [])
            listed = KubeObject(page)
            token = listed.meta.get("continue") or ""
            version = listed.resource_version or "0"
            if not token:
                break
        kind = self._kind.kind
        batch = []
        for obj in items:
            obj.setdefault("kind", kind)
            view = translate.view_of(kind, obj)
            if translate.is_relevant(kind, view, self._ours):
                message = await self._message("ADDED", view, relist_id)
                if message is not None:
                    batch.append((message.subject, message.payload, message.event_id))
        marker = KindResynced(kind=kind, relist_id=relist_id, resource_version=int(version or 0))
        marker_id = f"resync:{kind}:{relist_id}"
        batch.append(
            (
                subjects.cluster_resynced(kind),
                new_event(marker, source=SOURCE, event_id=marker_id).to_bytes(),
                marker_id,
            )
        )
        await self._bus.publish_many(batch)
        self.published += len(batch)
        log.info("listed", kind=kind, objects=len(items), resource_version=version)
        return str(version)

    async def _watch_from(self, version: str) -> None:
        kind = self._kind.kind
        pipe = self._bus.pipeline()
        resumed = False
        checkpoint = time.monotonic()
        while True:
            if resumed:
                WATCH_RESTARTS.labels(kind).inc()
            resumed = True
            query = [
                ("watch", "true"),
                ("resourceVersion", version),
                ("allowWatchBookmarks", "true"),
                ("timeoutSeconds", str(self._timeout)),
            ]
            async for line in stream_lines(self._api, self._kind.path, query, timeout=self._timeout + 30):
                change = line.get("type")
                obj = line.get("object") or {}
                if change == "ERROR":
                    code = int(obj.get("code") or 500)
                    raise ApiError(code, obj, str(obj.get("message") or "watch error"))
                if time.monotonic() - checkpoint > CHECKPOINT_SECONDS:
                    # Everything before this line is acknowledged: a standby may resume after it.
                    await pipe.drain()
                    self.resume_point, checkpoint = version, time.monotonic()
                view = translate.view_of(kind, obj)
                version = view.resource_version or version
                pipe.check()  # an ack lost with NATS: relist rather than move past the event
                if change not in ("ADDED", "MODIFIED", "DELETED"):
                    continue  # BOOKMARK: only the resume point moves
                obj.setdefault("kind", kind)
                if change != "DELETED" and not translate.is_relevant(kind, view, self._ours):
                    continue
                message = await self._message(change, view, None)
                if message is not None:
                    await pipe.send(message.subject, message.payload, message.event_id)
                    self.published += 1
            # The server ended the watch (timeout): everything sent is acknowledged before resuming.
            await pipe.drain()
            self.resume_point = version

    async def _message(self, change: Change, obj: KubeObject, relist_id: str | None) -> Message | None:
        """The event for one object, or None (audited) when it cannot be made: stepped over."""
        kind = self._kind.kind
        try:
            # A live change of a traced object is a step of its job's trace; a relist only carries
            # the context along (it republishes the whole cluster).
            context = tracing.valid(obj.annotation(TRACEPARENT))
            if relist_id is None:
                context = tracing.step(f"watcher: {kind} {change}", context, {"k8s.object": _name(obj)})
            message = translate.to_message(
                kind, change, obj, max_bytes=self._max_bytes, relist_id=relist_id, traceparent=context
            )
        except Exception as error:  # one object's fault must not stop the kind: see the docstring
            self.skipped += 1
            STEPPED_OVER.labels(kind, "skipped").inc()
            log.exception("object skipped: cannot be published", kind=kind, name=_name(obj))
            await self._audit("skipped", obj, f"{type(error).__name__}: {str(error)[:500]}")
            return None
        if not message.data.complete:
            STEPPED_OVER.labels(kind, "oversized").inc()
            log.warning("object too large for the bus; published as a reference", kind=kind, name=_name(obj))
            await self._audit("oversized", obj, f"published without its body (limit {self._max_bytes} bytes)")
        return message

    async def _audit(self, action: str, obj: KubeObject, reason: str) -> None:
        record = AuditRecorded(
            service="watcher",
            action=action,
            kind=self._kind.kind,
            namespace=str(obj.namespace) or None,
            name=_name(obj),
            uid=str(obj.uid) or None,
            outcome="failed" if action == "skipped" else "done",
            reason=reason,
        )
        version = obj.resource_version
        subject, event = audit_event(record, event_id=f"watcher:{action}:{record.uid}:{version}")
        try:
            await self._bus.publish(subject, event)
        except Exception as error:  # the audit is a record, not a gate: the stream goes on
            log.warning("audit not published", error=str(error))


def _name(obj: KubeObject) -> str:
    return str(obj.name or "-")[:253]
