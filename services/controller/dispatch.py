"""Shell: route each observed change (from `cluster.*` or from our own writes) to its handler.

The cache decides whether the change is news (a newer resourceVersion); only news is routed, so a
redelivered event, or the watch echo of a write the controller already saw in its response,
changes nothing. A change whose reaction fails is taken back out of the cache, so its redelivery
is handled. A relist by the watcher (its `KindResynced` marker) makes the controller list the kind
itself and drop what was deleted during the watch gap. Jobs' pods, PodGroups and the Job itself
go to the job's lifecycle; any pod or PodGroup also refreshes its PodGroup's status; a ReplicaSet or
StatefulSet resizes or removes its pods' PodGroup; queues and commands go to the queue keeper.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog

from services.controller.cache import GROUP_ANNOTATION, Cache, controller_uid, version_of
from services.controller.core.podgroups import WORKLOAD_KINDS
from services.controller.gangs import GangKeeper
from services.controller.jobs import JobDriver
from services.controller.queue_keeper import QueueKeeper
from shared.kube.kinds import KINDS

log = structlog.get_logger()
Json = dict[str, Any]


class Dispatcher:
    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self.jobs: JobDriver | None = None
        self.gangs: GangKeeper | None = None
        self.queues: QueueKeeper | None = None
        self._background: set[asyncio.Task[None]] = set()

    def written(self, obj: Json) -> None:
        """Our own write's response: route it like a watch event, in the background."""
        kind = obj.get("kind")
        if kind not in ("Job", "Pod", "PodGroup", "Queue"):
            return
        task = asyncio.get_running_loop().create_task(self.observe(str(kind), obj, deleted=False))
        self._background.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        with contextlib.suppress(asyncio.CancelledError):
            if task.exception():
                log.error("reaction to a write failed", error=repr(task.exception()))

    async def observe(self, kind: str, obj: Json, *, deleted: bool) -> None:
        obj.setdefault("kind", kind)
        obj.setdefault("apiVersion", KINDS[kind].api_version)
        try:
            old = self.cache.remove(kind, obj) if deleted else self.cache.put(kind, obj)
        except Cache.Stale:
            return
        new = None if deleted else obj
        try:
            await self.route(kind, old, new)
        except BaseException:
            # Not carried out: the change must stay news, or its redelivery would be dropped as
            # stale and the reaction (a policy action, a PodGroup, a phase record) lost.
            self.cache.undo(kind, obj, old, deleted=deleted)
            raise

    async def relisted(self, kind: str, listed: list[Json], listed_version: int) -> None:
        """The watcher relisted `kind` (after a watch gap): the cluster, listed again here, is
        the truth. What the cache holds that the list lacks was deleted while nobody watched."""
        present = {(o.get("metadata") or {}).get("uid") for o in listed}
        for obj in self.cache.all(kind):
            meta = obj.get("metadata") or {}
            if meta.get("uid") not in present and version_of(obj) <= listed_version:
                await self.observe(kind, obj, deleted=True)
        for obj in listed:
            await self.observe(kind, obj, deleted=False)

    async def route(self, kind: str, old: Json | None, new: Json | None) -> None:
        assert self.jobs is not None
        assert self.gangs is not None
        assert self.queues is not None
        current = new if new is not None else old
        assert current is not None
        meta = current.get("metadata") or {}
        namespace = meta.get("namespace") or ""
        if kind == "Job":
            await self.jobs.job_changed(old, new)
        elif kind == "Pod":
            owner = controller_uid(current)
            if owner and self.cache.by_uid("Job", owner) is not None:
                await self.jobs.pod_changed(owner, old, new)
            group = (meta.get("annotations") or {}).get(GROUP_ANNOTATION)
            if group:
                await self.gangs.group_changed(namespace, group)
            elif old is None and new is not None:
                await self.gangs.pod_added(new)
        elif kind == "PodGroup":
            owner = controller_uid(current)
            if new is not None and owner and self.cache.by_uid("Job", owner) is not None:
                await self.jobs.podgroup_changed(owner, old, new)
            if new is not None:
                await self.gangs.group_changed(namespace, meta["name"])
            if new is None or old is None:  # a Closing queue closes when it empties
                self.queues.podgroups_changed((current.get("spec") or {}).get("queue") or "default")
        elif kind == "Queue" and new is not None:
            await self.queues.queue_changed(new)
        elif kind in WORKLOAD_KINDS and new is not None:
            await self.gangs.workload_changed(new)
        elif kind == "Command" and new is not None and old is None:
            await self.queues.command_added(new)
