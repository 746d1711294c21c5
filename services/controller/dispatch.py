"""Shell: route each observed change (from `cluster.*` or from our own writes) to its handler.

The cache decides whether the change is news (a newer resourceVersion); only news is routed, so a
redelivered event, or the watch echo of a write the controller already saw in its response,
changes nothing. A change whose reaction fails is taken back out of the cache, so its redelivery
is handled. A relist by the watcher (its `KindResynced` marker) makes the controller list the kind
itself and drop what was deleted during the watch gap. Jobs' pods, PodGroups and the Job itself
go to the job's lifecycle; any pod or PodGroup also refreshes its PodGroup's status; a ReplicaSet or
StatefulSet resizes or removes its pods' PodGroup; queues and commands go to the queue keeper;
nodes, HyperNodes and Volcano's controller ConfigMap go to the topology keeper.

With several replicas every change still reaches every replica's cache, but only the replica
holding the shard of the change's job key (core/sharding.py) reacts to it, under that key
(`acting_for`), so that its writes stop if the shard moves away mid-reaction (shard_leases.py).
Cluster-scoped work (queues, HyperNode discovery) is the shard of `CLUSTER_KEY`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import structlog

from services.controller.cache import Cache
from services.controller.core.podgroups import WORKLOAD_KINDS
from services.controller.core.sharding import CLUSTER_KEY, JobKey, job_key
from services.controller.gangs import GangKeeper
from services.controller.jobs import JobDriver
from services.controller.queue_keeper import QueueKeeper
from services.controller.shard_leases import acting_for
from services.controller.topology_keeper import TopologyKeeper
from shared.kube.kinds import KINDS
from shared.volcano.objects import KubeObject, PodGroupObject, PodObject

log = structlog.get_logger()
Json = dict[str, Any]


class Dispatcher:
    """Built in one go by the composition root (app.py: `build`) from the parts it routes to."""

    def __init__(
        self,
        cache: Cache,
        *,
        jobs: JobDriver,
        gangs: GangKeeper,
        queues: QueueKeeper,
        topology: TopologyKeeper | None = None,
        acts_for: Callable[[JobKey], bool] = lambda key: True,
    ) -> None:
        self.cache = cache
        self.jobs = jobs
        self.gangs = gangs
        self.queues = queues
        self.topology = topology
        self.acts_for = acts_for  # a sharded replica's: whether it holds a job key's shard
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
        present = {KubeObject(o).uid for o in listed}
        for obj in self.cache.all(kind):
            held = KubeObject(obj)
            if held.uid not in present and held.version <= listed_version:
                await self.observe(kind, obj, deleted=True)
        for obj in listed:
            await self.observe(kind, obj, deleted=False)

    async def route(self, kind: str, old: Json | None, new: Json | None) -> None:
        current = new if new is not None else old
        assert current is not None
        key = job_key(kind, current)
        if self.acts_for(key):
            with acting_for(key):
                await self._route_ours(kind, old, new, current)
        if kind == "PodGroup" and (new is None or old is None) and self.acts_for(CLUSTER_KEY):
            # A Closing queue closes when it empties: queue work is the cluster-scoped shard's.
            self.queues.podgroups_changed(PodGroupObject(current).queue)

    async def _route_ours(self, kind: str, old: Json | None, new: Json | None, current: Json) -> None:
        view = PodObject(current)
        namespace = view.namespace
        if kind == "Job":
            await self.jobs.job_changed(old, new)
        elif kind == "Pod":
            owner = view.controller_uid
            if owner and self.cache.by_uid("Job", owner) is not None:
                await self.jobs.pod_changed(owner, old, new)
            group = view.group_name
            if group:
                await self.gangs.group_changed(namespace, group)
            elif old is None and new is not None:
                await self.gangs.pod_added(new)
        elif kind == "PodGroup":
            owner = view.controller_uid
            if new is not None and owner and self.cache.by_uid("Job", owner) is not None:
                await self.jobs.podgroup_changed(owner, old, new)
            if new is not None:
                await self.gangs.group_changed(namespace, view.name)
        elif kind == "Queue" and new is not None:
            await self.queues.queue_changed(new)
        elif kind in WORKLOAD_KINDS and new is not None:
            await self.gangs.workload_changed(new)
        elif kind == "Command" and new is not None and old is None:
            await self.queues.command_added(new)
        elif kind == "Node" and self.topology is not None:
            self.topology.node_changed(old, new)
        elif kind == "HyperNode" and self.topology is not None:
            self.topology.hyper_node_changed()

    def topology_config(self, configmap: Json | None, *, deleted: bool) -> None:
        """A ConfigMap of volcano-system changed: Volcano's controller configuration may have.
        Every replica reads it; only the cluster-scoped shard's holder writes HyperNodes."""
        if configmap is not None and self.topology is not None:
            with acting_for(CLUSTER_KEY):
                self.topology.config_changed(configmap, deleted=deleted)

    def topology_gained(self) -> None:
        """This replica took the cluster-scoped shard over: discovery is now its work."""
        if self.topology is not None:
            with acting_for(CLUSTER_KEY):
                self.topology.hyper_node_changed()
