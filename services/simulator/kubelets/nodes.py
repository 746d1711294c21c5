"""Simulated nodes: the nodes file (the scenario format's `cluster.nodes`) and Node objects.

`parse_node_entries` turns the YAML entries (a name, or `namePrefix` + `count`; cpu, memory,
gpu, pods, extended resources, labels, taints) into `NodeSpec`s; `node_object` renders one as
the Node a kubelet would register: capacity equal to allocatable, Ready, with the well-known
labels. The kubelets and the control API both build nodes here. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from shared.domain.quantity import QuantityError, to_milli
from shared.domain.resources import GPU

# The devices a simulated node has, as JSON: what its DRA drivers publish (kubelets/dra_drivers.py).
DEVICES_ANNOTATION = "simulator.phalanx/devices"
_ENTRY_KEYS = frozenset(
    {"name", "namePrefix", "count", "cpu", "memory", "gpu", "pods", "extended", "labels", "taints", "devices"}
)
_TAINT_EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})


class NodeFileError(ValueError):
    """A nodes file entry that cannot describe a node."""


@dataclass(frozen=True)
class NodeSpec:
    name: str
    cpu: str = "8"
    memory: str = "32Gi"
    pods: int = 110
    gpu: int = 0
    extended: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, str], ...] = ()
    # DRA devices its drivers publish as ResourceSlices (kubelets/dra_drivers.py):
    # {driver, count, namePrefix, attributes, capacity} per entry.
    devices: tuple[Mapping[str, Any], ...] = ()

    def capacity(self) -> dict[str, str]:
        capacity = {
            "cpu": self.cpu,
            "memory": self.memory,
            "pods": str(self.pods),
            "ephemeral-storage": "100Gi",
        }
        if self.gpu:
            capacity[GPU] = str(self.gpu)
        capacity.update({name: str(amount) for name, amount in self.extended.items()})
        return capacity


DEFAULT_NODES: tuple[NodeSpec, ...] = tuple(NodeSpec(f"node-{i}") for i in range(4))


def _check_taint(taint: Any) -> Mapping[str, str]:
    if not isinstance(taint, Mapping) or not taint.get("key"):
        raise NodeFileError(f"a taint needs a key: {taint!r}")
    if taint.get("effect") not in _TAINT_EFFECTS:
        raise NodeFileError(f"taint effect must be one of {sorted(_TAINT_EFFECTS)}: {taint!r}")
    return {k: str(v) for k, v in taint.items()}


def _check_devices(entries: Any) -> list[Mapping[str, Any]]:
    if not isinstance(entries, list):
        raise NodeFileError(f"devices must be a list: {entries!r}")
    for entry in entries:
        if not isinstance(entry, Mapping) or not entry.get("driver"):
            raise NodeFileError(f"a device entry needs a driver: {entry!r}")
        if int(entry.get("count", 1)) < 0:
            raise NodeFileError(f"a device count must not be negative: {entry!r}")
    return [dict(entry) for entry in entries]


def parse_node_entry(entry: Mapping[str, Any]) -> list[NodeSpec]:
    unknown = set(entry) - _ENTRY_KEYS
    if unknown:
        raise NodeFileError(f"unknown node field(s) {sorted(unknown)} in {dict(entry)!r}")
    try:
        for quantity in ("cpu", "memory"):
            if quantity in entry:
                to_milli(str(entry[quantity]))
        for amount in (entry.get("extended") or {}).values():
            to_milli(str(amount))
    except QuantityError as error:
        raise NodeFileError(str(error)) from error
    common: dict[str, Any] = {
        "cpu": str(entry.get("cpu", "8")),
        "memory": str(entry.get("memory", "32Gi")),
        "pods": int(entry.get("pods", 110)),
        "gpu": int(entry.get("gpu", 0)),
        "extended": {str(k): str(v) for k, v in (entry.get("extended") or {}).items()},
        "labels": {str(k): str(v) for k, v in (entry.get("labels") or {}).items()},
        "taints": tuple(_check_taint(t) for t in entry.get("taints") or []),
        "devices": tuple(_check_devices(entry.get("devices") or [])),
    }
    if "name" in entry:
        if "namePrefix" in entry or "count" in entry:
            raise NodeFileError(f"give either name or namePrefix + count: {dict(entry)!r}")
        return [NodeSpec(name=str(entry["name"]), **common)]
    if "namePrefix" not in entry or "count" not in entry:
        raise NodeFileError(f"a node needs a name, or namePrefix and count: {dict(entry)!r}")
    return [NodeSpec(name=f"{entry['namePrefix']}{i}", **common) for i in range(int(entry["count"]))]


def parse_node_entries(entries: Any) -> list[NodeSpec]:
    """The nodes of a YAML list; rejects unknown fields and duplicate names."""
    if not isinstance(entries, list):
        raise NodeFileError("the nodes file must hold a YAML list of nodes")
    specs = [spec for entry in entries for spec in parse_node_entry(entry)]
    names = [spec.name for spec in specs]
    duplicates = sorted({n for n in names if names.count(n) > 1}) if len(set(names)) != len(names) else []
    if duplicates:
        raise NodeFileError(f"duplicate node names: {duplicates}")
    return specs


def node_address(index: int) -> str:
    return f"10.0.{index // 250}.{index % 250 + 1}"


def ready_condition(ready: bool, now: str) -> dict[str, Any]:
    return {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "KubeletReady" if ready else "KubeletNotReady",
        "message": "kubelet is posting ready status" if ready else "simulated node made NotReady",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def node_status(name: str, capacity: Mapping[str, str], address: str, now: str) -> dict[str, Any]:
    pressure = [
        {
            "type": t,
            "status": "False",
            "reason": f"KubeletHas{reason}",
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
        for t, reason, message in (
            ("MemoryPressure", "SufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "NoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "SufficientPID", "kubelet has sufficient PID available"),
        )
    ]
    return {
        "capacity": dict(capacity),
        "allocatable": dict(capacity),
        "conditions": [*pressure, ready_condition(True, now)],
        "addresses": [
            {"type": "InternalIP", "address": address},
            {"type": "Hostname", "address": name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": name,
            "systemUUID": name,
            "bootID": name,
            "kernelVersion": "6.1.0-simulated",
            "osImage": "Phalanx simulated node",
            "containerRuntimeVersion": "simulated://1.0",
            "kubeletVersion": "v1.31.0",
            "kubeProxyVersion": "v1.31.0",
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    }


def node_object(spec: NodeSpec, address: str, created: datetime) -> dict[str, Any]:
    now = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    labels = {
        "kubernetes.io/hostname": spec.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        **spec.labels,
    }
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": spec.name, "labels": labels},
        "spec": {},
        "status": node_status(spec.name, spec.capacity(), address, now),
    }
    if spec.taints:
        node["spec"]["taints"] = [dict(t) for t in spec.taints]
    if spec.devices:  # what its DRA drivers publish (kubelets/dra_drivers.py reads it back)
        node["metadata"]["annotations"] = {DEVICES_ANNOTATION: json.dumps([dict(d) for d in spec.devices])}
    return node
