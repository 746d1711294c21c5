"""`phalanx up --topology nodes=64,racks=16,spines=4`: a simulated cluster with a network topology.

The nodes (`nodes=N` of the default shape, or those of `--nodes FILE`, or the default four) are
split in name order into `racks` contiguous racks, and the racks into `spines` contiguous spines;
each node is labelled `topology.phalanx.io/rack=rack-<r>` (and `topology.phalanx.io/spine=
spine-<s>`). Then Volcano's label discovery is switched on for those labels (the ConfigMap
`volcano-controller-configmap`, `networkTopologyDiscovery` with `source: label`), so the
controller creates the HyperNodes: one of tier 1 per rack, one of tier 2 per spine over its racks,
and keeps them current as nodes change. `write_nodes_file` runs before the stack starts (it
writes the labelled nodes file the simulator reads); `enable_discovery` after.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

RACK_LABEL = "topology.phalanx.io/rack"
SPINE_LABEL = "topology.phalanx.io/spine"
TOPOLOGY_TYPE = "phalanx"
DEFAULT_NODE = {"cpu": "8", "memory": "32Gi"}
DEFAULT_COUNT = 4
_PART = re.compile(r"^(nodes|racks|spines)=([1-9][0-9]*)$")


class TopologyError(ValueError):
    """A --topology value that cannot be used; the message says which part and why."""


@dataclass(frozen=True)
class TopologySpec:
    racks: int
    spines: int = 0
    nodes: int | None = None


def parse_topology(text: str) -> TopologySpec:
    found: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        match = _PART.match(part)
        if match is None:
            raise TopologyError(f"--topology: {part!r} is not one of nodes=N, racks=N, spines=N (N >= 1)")
        if match.group(1) in found:
            raise TopologyError(f"--topology: {match.group(1)} is given twice")
        found[match.group(1)] = int(match.group(2))
    if "racks" not in found:
        raise TopologyError("--topology: racks=N is required, e.g. racks=16,spines=4")
    spec = TopologySpec(found["racks"], found.get("spines", 0), found.get("nodes"))
    if spec.spines > spec.racks:
        raise TopologyError(f"--topology: {spec.spines} spines need at least as many racks, not {spec.racks}")
    return spec


def _expanded(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    nodes = []
    for entry in entries:
        if "name" in entry:
            nodes.append(dict(entry))
            continue
        rest = {k: v for k, v in entry.items() if k not in ("namePrefix", "count")}
        nodes += [{**rest, "name": f"{entry['namePrefix']}{i}"} for i in range(int(entry["count"]))]
    return nodes


def labelled_nodes(spec: TopologySpec, entries: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The cluster's nodes, each labelled with its rack and spine."""
    if entries is None:
        count = spec.nodes or DEFAULT_COUNT
        nodes: list[dict[str, Any]] = [{"name": f"node-{i}", **DEFAULT_NODE} for i in range(count)]
    else:
        nodes = sorted(_expanded(entries), key=lambda n: str(n["name"]))
    if spec.racks > len(nodes):
        raise TopologyError(f"--topology: {spec.racks} racks need at least as many nodes, not {len(nodes)}")
    for index, node in enumerate(nodes):
        rack = index * spec.racks // len(nodes)
        labels = {**(node.get("labels") or {}), RACK_LABEL: f"rack-{rack}"}
        if spec.spines:
            labels[SPINE_LABEL] = f"spine-{rack * spec.spines // spec.racks}"
        node["labels"] = labels
    return nodes


def write_nodes_file(spec: TopologySpec, nodes_file: Path | None, state_dir: Path) -> Path:
    entries = yaml.safe_load(nodes_file.read_text()) if nodes_file is not None else None
    if entries is not None and not isinstance(entries, list):
        raise TopologyError(f"{nodes_file}: the nodes file must hold a YAML list of nodes")
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / "nodes-with-topology.yaml"
    path.write_text(yaml.safe_dump(labelled_nodes(spec, entries), sort_keys=False))
    return path


def discovery_configmap(spec: TopologySpec) -> dict[str, Any]:
    labels = [SPINE_LABEL] if spec.spines else []
    labels += [RACK_LABEL, "kubernetes.io/hostname"]
    conf = {
        "networkTopologyDiscovery": [
            {
                "source": "label",
                "enabled": True,
                "config": {"networkTopologyTypes": {TOPOLOGY_TYPE: [{"nodeLabel": key} for key in labels]}},
            }
        ]
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "volcano-controller-configmap", "namespace": "volcano-system"},
        "data": {"volcano-controller.conf": yaml.safe_dump(conf, sort_keys=False)},
    }


def enable_discovery(spec: TopologySpec, kubeconfig: Path, simulator_url: str) -> None:
    from phalanx.scenario.kube import Kube
    from phalanx.scenario.manifests import namespace_manifest

    kube = Kube(kubeconfig, simulator_url)
    try:
        if kube.get("Namespace", None, "volcano-system") is None:
            kube.create(namespace_manifest("volcano-system"))
        kube.apply(discovery_configmap(spec))
    finally:
        kube.close()
