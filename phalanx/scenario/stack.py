"""The stack a scenario runs against, and how each scenario gets a fresh cluster.

`Stack` is the seam `run_files` needs: where the Kubernetes API is (a kubeconfig), where the
simulator's control API is, and `reset(cluster, scheduler_conf)`. `ExternalStack` is a stack
someone already started (`phalanx up`, state in `.phalanx`): its reset deletes what earlier
scenarios left, waits until it is gone, then creates the scenario's namespaces, priority classes,
queues and nodes, and writes the scheduler configuration where Volcano's scheduler reads it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import yaml

from phalanx.scenario.kube import Kube, KubeError
from phalanx.scenario.manifests import (
    DEFAULT_QUEUE,
    SCHEDULER_CONFIGMAP,
    SCHEDULER_NAMESPACE,
    command_manifest,
    default_queue_reset_patch,
    namespace_manifest,
    node_manifest,
    priority_class_manifest,
    queue_manifest,
    scheduler_configmap,
)
from phalanx.scenario.model import ClusterSpec, QueueEntry
from phalanx.scenario.objects import key_of
from shared.volcano import ROOT_QUEUE
from shared.volcano.queue import QUEUE_API_VERSION

SYSTEM_NAMESPACES = frozenset(
    {"kube-system", "kube-public", "kube-node-lease", SCHEDULER_NAMESPACE, "phalanx-system"}
)
# Deleted first to last: owners before what they own, so controllers do not recreate it.
NAMESPACED_KINDS = (
    "Deployment",
    "StatefulSet",
    "ReplicaSet",
    "RayCluster",
    "PyTorchJob",
    "TFJob",
    "MPIJob",
    "Job",
    "Command",
    "PodGroup",
    "PodDisruptionBudget",
    "Pod",
    "Service",
    "ConfigMap",
    "Secret",
    "NetworkPolicy",
    "PersistentVolumeClaim",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "Event",
)
# Cluster-scoped storage a scenario may create (volumes with node affinity, their classes).
CLUSTER_STORAGE_KINDS = ("PersistentVolume", "StorageClass", "DeviceClass")
# and the network topology it describes (HyperNodes), cleared with them
CLUSTER_KINDS = (*CLUSTER_STORAGE_KINDS, "HyperNode")
SYSTEM_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


class Stack(Protocol):
    kubeconfig: Path
    simulator_url: str

    def reset(self, cluster: ClusterSpec, scheduler_conf: str | None) -> None: ...


class StackError(Exception):
    """The stack is not there, or cannot be brought to the scenario's starting state."""


def simulator_url_of(kubeconfig: Path) -> str:
    """The server of the kubeconfig's current context (the simulator serves its control API
    beside the Kubernetes API)."""
    try:
        document: Any = yaml.safe_load(kubeconfig.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise StackError(f"cannot read kubeconfig {kubeconfig}: {error}") from None
    contexts = {c.get("name"): c.get("context") or {} for c in document.get("contexts") or []}
    clusters = {c.get("name"): c.get("cluster") or {} for c in document.get("clusters") or []}
    context = contexts.get(document.get("current-context")) or {}
    server = (clusters.get(context.get("cluster")) or {}).get("server")
    if not server:
        raise StackError(f"kubeconfig {kubeconfig} names no server for its current context")
    return str(server)


class ExternalStack:
    """A stack already running; by default the one `phalanx up` keeps in `.phalanx`."""

    def __init__(
        self,
        state_dir: Path = Path(".phalanx"),
        kubeconfig: Path | None = None,
        simulator_url: str | None = None,
        *,
        settle_timeout: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.kubeconfig = kubeconfig or state_dir / "kubeconfig"
        if not self.kubeconfig.exists():
            hint = "start the stack with `phalanx up` or pass --kubeconfig"
            raise StackError(f"no kubeconfig at {self.kubeconfig}: {hint}")
        self.simulator_url = simulator_url or simulator_url_of(self.kubeconfig)
        self._settle_timeout, self._sleep = settle_timeout, sleep

    def reset(self, cluster: ClusterSpec, scheduler_conf: str | None) -> None:
        kube = Kube(self.kubeconfig, self.simulator_url)
        try:
            self._clear(kube)
            self._create(kube, cluster)
            self.configure_scheduler(kube, scheduler_conf)
        except KubeError as error:
            raise StackError(f"resetting the cluster: {error}") from error
        finally:
            kube.close()

    # -- clearing ------------------------------------------------------------------------------

    def _leftovers(self, kube: Kube) -> list[tuple[str, str | None, str]]:
        """(kind, namespace, name) of everything an earlier scenario may have left."""
        user_namespaces = {key_of(ns)[1] for ns in kube.list_objects("Namespace")} - SYSTEM_NAMESPACES
        found: list[tuple[str, str | None, str]] = []
        for kind in NAMESPACED_KINDS:
            try:
                objects = kube.list_objects(kind)
            except KubeError as error:
                if error.not_found:  # a cluster that does not serve this kind
                    continue
                raise
            found += [(kind, *key_of(o)) for o in objects if key_of(o)[0] in user_namespaces]
        found += [("Node", None, key_of(o)[1]) for o in kube.list_objects("Node")]
        for kind in CLUSTER_KINDS:
            try:
                found += [(kind, None, key_of(o)[1]) for o in kube.list_objects(kind)]
            except KubeError as error:
                if not error.not_found:
                    raise
        found += [
            ("Queue", None, key_of(o)[1])
            for o in kube.list_objects("Queue")
            if key_of(o)[1] not in (DEFAULT_QUEUE, ROOT_QUEUE)  # built in: never deleted
        ]
        found += [
            ("PriorityClass", None, key_of(o)[1])
            for o in kube.list_objects("PriorityClass")
            if key_of(o)[1] not in SYSTEM_PRIORITY_CLASSES
        ]
        found += [("Namespace", None, n) for n in sorted(user_namespaces - {"default"})]
        return found

    def _clear(self, kube: Kube) -> None:
        deadline = time.monotonic() + self._settle_timeout
        while True:
            leftovers = self._leftovers(kube)
            if not leftovers:
                return
            if time.monotonic() > deadline:
                shown = ", ".join(f"{k} {ns + '/' if ns else ''}{n}" for k, ns, n in leftovers[:10])
                raise StackError(f"these objects would not go away: {shown}")
            for kind, namespace, name in leftovers:
                try:
                    kube.delete(kind, namespace, name, grace_seconds=0 if kind == "Pod" else None)
                except KubeError as error:
                    # Admission refuses to delete a queue that still holds jobs; the jobs deleted a
                    # moment ago may still be counted, so that refusal is retried until the deadline.
                    waiting_queue = kind == "Queue" and error.status == 403
                    if not (error.not_found or error.conflict or waiting_queue):
                        raise
            self._sleep(0.2)

    # -- creating ------------------------------------------------------------------------------

    def _create(self, kube: Kube, cluster: ClusterSpec) -> None:
        for namespace in cluster.all_namespaces():
            if kube.get("Namespace", None, namespace) is None:
                kube.create(namespace_manifest(namespace))
        for priority_class in cluster.priority_classes:
            kube.create(priority_class_manifest(priority_class))
        listed = {q.name: q for q in cluster.queues}
        default_patch = default_queue_reset_patch(listed.get(DEFAULT_QUEUE))
        if kube.get("Queue", None, DEFAULT_QUEUE) is None:
            spec = {k: v for k, v in default_patch["spec"].items() if v is not None}
            kube.create({**queue_manifest(QueueEntry(name=DEFAULT_QUEUE)), "spec": spec})
        else:
            kube.merge_patch("Queue", None, DEFAULT_QUEUE, default_patch)
        for queue in cluster.queues:
            if queue.name != DEFAULT_QUEUE:
                kube.create(queue_manifest(queue))
        for entry in cluster.nodes:
            for name in entry.names():
                kube.create(node_manifest(name, entry))
        for queue in cluster.queues:
            if queue.state == "Closed":
                target = kube.get("Queue", None, queue.name) or {}
                kube.create(command_manifest("default", "CloseQueue", QUEUE_API_VERSION, "Queue", target))

    def configure_scheduler(self, kube: Kube, conf: str | None) -> None:
        """Volcano's convention: the scheduler reads `volcano-scheduler.conf` from this ConfigMap;
        without one it runs its default configuration."""
        if conf is None:
            try:
                kube.delete("ConfigMap", SCHEDULER_NAMESPACE, SCHEDULER_CONFIGMAP)
            except KubeError as error:
                if not error.not_found:
                    raise
            return
        if kube.get("Namespace", None, SCHEDULER_NAMESPACE) is None:
            kube.create(namespace_manifest(SCHEDULER_NAMESPACE))
        kube.apply(scheduler_configmap(conf))
