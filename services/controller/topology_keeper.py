"""Shell: keep discovered HyperNodes and every HyperNode's status.nodeCount current.

The controller is the one writer of API objects, so Volcano's HyperNode discovery lives here.
The label source's configuration is read from Volcano's ConfigMap (`volcano-controller.conf` in
`volcano-controller-configmap`, volcano-system) at start and whenever it changes; a sync runs,
once for a burst of changes, when a node comes, goes or changes a label, when a HyperNode changes
or goes, and when the configuration changes. It creates, updates and deletes the HyperNodes
labelled as discovered from labels (`core.topology_discovery`), never hand-written ones, and
writes each HyperNode's status.nodeCount where it differs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from services.controller.cache import Cache
from services.controller.coalesce import Coalescer
from services.controller.core.topology_discovery import (
    CONF_KEY,
    CONFIGMAP,
    CONFIGMAP_NAMESPACE,
    LabelDiscovery,
    discover,
    node_counts,
    parse_discovery,
    plan_sync,
)
from services.controller.kube_writes import KubeWrites
from shared.volcano.objects import KubeObject

log = structlog.get_logger()
Json = dict[str, Any]
SYNC_DELAY_SECONDS = 0.2
_KEY = "topology"


class TopologyKeeper:
    def __init__(self, cache: Cache, kube: KubeWrites, acts: Callable[[], bool] = lambda: True) -> None:
        self._cache = cache
        self._kube = kube
        # With controller replicas, whether this one holds the cluster-scoped shard: only it writes.
        self._acts = acts
        self._discovery: LabelDiscovery | None = None
        self._syncs: Coalescer[str] = Coalescer(SYNC_DELAY_SECONDS, self._sync, what="HyperNode sync")

    async def start(self) -> None:
        configmap = await self._kube.get("ConfigMap", CONFIGMAP_NAMESPACE, CONFIGMAP)
        self._configure(configmap)
        self._syncs.request(_KEY)

    def _configure(self, configmap: Json | None) -> None:
        text = ((configmap or {}).get("data") or {}).get(CONF_KEY)
        self._discovery = parse_discovery(text)
        for problem in self._discovery.problems if self._discovery else ():
            log.warning("network topology discovery entry skipped", problem=problem)

    def config_changed(self, configmap: Json, *, deleted: bool) -> None:
        if KubeObject(configmap).key != (CONFIGMAP_NAMESPACE, CONFIGMAP):
            return
        self._configure(None if deleted else configmap)
        self._syncs.request(_KEY)

    def node_changed(self, old: Json | None, new: Json | None) -> None:
        if old is None or new is None or _labels(old) != _labels(new):
            self._syncs.request(_KEY)

    def hyper_node_changed(self) -> None:
        self._syncs.request(_KEY)

    async def _sync(self, _: str) -> None:
        if not self._acts():
            return  # another replica holds the cluster-scoped shard; it discovers and counts
        nodes = [(str((node := KubeObject(n)).name), dict(node.labels)) for n in self._cache.all("Node")]
        existing = self._cache.all("HyperNode")
        if self._discovery is not None:
            plan = plan_sync(discover(nodes, self._discovery), existing)
            for name in plan.conflicts:
                log.warning("a discovered HyperNode's name is taken by a hand-written one", name=name)
            for obj in plan.create:
                await self._kube.create(obj)
            for obj in plan.update:
                await self._kube.replace(obj)
            for name in plan.delete:
                await self._kube.delete("HyperNode", None, name)
            if plan.create or plan.update or plan.delete:
                return  # their watch events bring the next sync, which counts their nodes
        for name, count in node_counts(existing, nodes).items():
            held = self._cache.get("HyperNode", ("", name)) or {}
            status = dict(held.get("status") or {})
            if held and status.get("nodeCount") != count:
                await self._kube.set_status("HyperNode", None, name, {**status, "nodeCount": count})


def _labels(obj: Json) -> dict[str, str]:
    return dict(KubeObject(obj).labels)
