"""Shell: list-then-watch one kind forever, publishing every change to the CLUSTER stream.

A (re)start lists the kind, publishes every object with a relist id and then a `KindResynced`
marker, so consumers drop what vanished while nobody watched; then it watches from the list's
resourceVersion with bookmarks. A 410 Gone, or any broken stream, leads back to a relist:
level-triggered, nothing lost. Publishing is pipelined (publish_async) and awaited before the
resume point moves past it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Collection
from typing import Any

import structlog
from kubernetes_asyncio import client

from services.watcher import translate
from services.watcher.kinds import WatchedKind
from shared import failpoints
from shared.bus.nats import Bus
from shared.kube.client import ApiError, request, stream_lines
from shared.messages import subjects
from shared.messages.cluster import KindResynced
from shared.messages.envelope import new_event

log = structlog.get_logger()

SOURCE = "phalanx/watcher"
PAGE = 2000


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
        self._ours = frozenset(scheduler_names)
        self._timeout = watch_timeout
        self.synced = asyncio.Event()
        self.published = 0

    async def run(self) -> None:
        while True:
            try:
                version = await self._relist()
                await failpoints.hit("watcher.after_publish_before_watch")
                self.synced.set()
                await self._watch_from(version)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("watch broke; relisting", kind=self._kind.kind, error=str(error))
                await asyncio.sleep(1.0)

    async def _relist(self) -> str:
        relist_id = uuid.uuid4().hex[:16]
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            query = [("limit", str(PAGE))] + ([("continue", token)] if token else [])
            page = await request(self._api, "GET", self._kind.path, query=query)
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue") or ""
            version = (page.get("metadata") or {}).get("resourceVersion") or "0"
            if not token:
                break
        kind = self._kind.kind
        batch = []
        for obj in items:
            obj.setdefault("kind", kind)
            if translate.is_relevant(kind, obj, self._ours):
                subject, event_id, data = translate.to_event(kind, "ADDED", obj, relist_id=relist_id)
                batch.append(
                    (
                        subject,
                        new_event(data, source=SOURCE, event_id=event_id).to_bytes(),
                        event_id,
                    )
                )
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
        while True:
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
                version = (obj.get("metadata") or {}).get("resourceVersion") or version
                if change not in ("ADDED", "MODIFIED", "DELETED"):
                    continue  # BOOKMARK: only the resume point moves
                obj.setdefault("kind", kind)
                if change != "DELETED" and not translate.is_relevant(kind, obj, self._ours):
                    continue
                subject, event_id, data = translate.to_event(kind, change, obj)
                payload = new_event(data, source=SOURCE, event_id=event_id).to_bytes()
                await pipe.send(subject, payload, event_id)
                self.published += 1
            # The server ended the watch (timeout): everything sent is acknowledged before resuming.
            await pipe.drain()
