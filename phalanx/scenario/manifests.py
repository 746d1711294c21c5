"""The Kubernetes objects a scenario's cluster section and steps turn into; pure builders.

`ExternalStack.reset` creates namespaces, nodes, queues and priority classes from these, and the
steps build Nodes and Volcano Commands here: a Command names its target as vcctl does
(`generateName: <target>-<action>-`, an owner reference and `target` pointing at the object).
"""

from __future__ import annotations

import json
from typing import Any

from phalanx.scenario.model import NodeShape, PriorityClassEntry, QueueEntry, Taint
from shared.volcano.queue import QUEUE_API_VERSION

Obj = dict[str, Any]

GPU_RESOURCE = "nvidia.com/gpu"
# The simulated kubelets read a node's DRA devices from it (services/simulator/kubelets/nodes.py).
DEVICES_ANNOTATION = "simulator.phalanx/devices"
SCHEDULER_CONFIGMAP = "volcano-scheduler-configmap"
SCHEDULER_NAMESPACE = "volcano-system"
SCHEDULER_CONF_KEY = "volcano-scheduler.conf"
COMMAND_API_VERSION = "bus.volcano.sh/v1alpha1"
DEFAULT_QUEUE = "default"


def taint_object(taint: Taint) -> dict[str, str]:
    return taint.model_dump(exclude_none=True)


def node_manifest(name: str, shape: NodeShape) -> Obj:
    """A Node as a kubelet would register it: capacity = allocatable, the hostname label."""
    capacity = {"cpu": shape.cpu, "memory": shape.memory, "pods": str(shape.pods)}
    if shape.gpu:
        capacity[GPU_RESOURCE] = str(shape.gpu)
    capacity.update(shape.extended)
    spec: Obj = {}
    if shape.taints:
        spec["taints"] = [taint_object(t) for t in shape.taints]
    metadata: Obj = {"name": name, "labels": {"kubernetes.io/hostname": name, **shape.labels}}
    if shape.devices:  # the simulated kubelet publishes them as ResourceSlices
        metadata["annotations"] = {DEVICES_ANNOTATION: json.dumps(shape.devices)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": spec,
        "status": {"capacity": dict(capacity), "allocatable": dict(capacity)},
    }


def namespace_manifest(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def queue_spec(entry: QueueEntry) -> Obj:
    spec: Obj = {"weight": entry.weight}
    if entry.capability is not None:
        spec["capability"] = dict(entry.capability)
    if entry.guarantee is not None:
        spec["guarantee"] = {"resource": dict(entry.guarantee)}
    if entry.deserved is not None:
        spec["deserved"] = dict(entry.deserved)
    for key, value in (
        ("reclaimable", entry.reclaimable),
        ("priority", entry.priority),
        ("parent", entry.parent),
    ):
        if value is not None:
            spec[key] = value
    return spec


def queue_manifest(entry: QueueEntry) -> Obj:
    return {
        "apiVersion": QUEUE_API_VERSION,
        "kind": "Queue",
        "metadata": {"name": entry.name},
        "spec": queue_spec(entry),
    }


def default_queue_reset_patch(entry: QueueEntry | None) -> Obj:
    """A merge patch that gives queue "default" the scenario's spec, or Volcano's default one."""
    wanted = queue_spec(entry or QueueEntry(name=DEFAULT_QUEUE, reclaimable=True))
    cleared = {key: None for key in ("capability", "guarantee", "deserved", "priority", "parent")}
    return {"spec": {"reclaimable": True, **cleared, **wanted}}


def priority_class_manifest(entry: PriorityClassEntry) -> Obj:
    manifest: Obj = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": entry.name},
        "value": entry.value,
    }
    for key, value in (
        ("globalDefault", entry.global_default),
        ("preemptionPolicy", entry.preemption_policy),
        ("description", entry.description),
    ):
        if value is not None:
            manifest[key] = value
    return manifest


def command_manifest(
    namespace: str, action: str, target_api_version: str, target_kind: str, target: Obj
) -> Obj:
    """A bus.volcano.sh Command on `target` (a fetched Job or Queue), as vcctl creates it."""
    metadata = target.get("metadata") or {}
    reference = {
        "apiVersion": target_api_version,
        "kind": target_kind,
        "name": metadata.get("name"),
        "uid": metadata.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": COMMAND_API_VERSION,
        "kind": "Command",
        "metadata": {
            "generateName": f"{metadata.get('name')}-{action.lower()}-",
            "namespace": namespace,
            "ownerReferences": [reference],
        },
        "action": action,
        "target": reference,
    }


def scheduler_configmap(conf: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": SCHEDULER_CONFIGMAP, "namespace": SCHEDULER_NAMESPACE},
        "data": {SCHEDULER_CONF_KEY: conf},
    }
