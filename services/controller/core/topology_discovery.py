"""Pure: HyperNodes discovered from node labels, as Volcano's label discovery source builds them.

Volcano's controller reads `networkTopologyDiscovery` from `volcano-controller.conf` in the
ConfigMap `volcano-controller-configmap` (namespace volcano-system). An entry with
`source: label` and `enabled: true` names, per topology type, an ordered list of node labels from
the top tier down, the last being the node itself (`kubernetes.io/hostname`):

    networkTopologyTypes:
      rack-spine:
        - nodeLabel: "example.com/spine"   # tier 2
        - nodeLabel: "example.com/rack"    # tier 1
        - nodeLabel: "kubernetes.io/hostname"

Nodes with the same value of the tier-1 label form one tier-1 HyperNode (members: those nodes);
tier-1 HyperNodes whose nodes share the tier-2 value form one tier-2 HyperNode, and so on. A node
missing a label stops there. Each HyperNode is named `hypernode-<type>-tier<N>-<value>` (Volcano
adds a random suffix; a name derived from the value keeps every sync idempotent), labelled
`volcano.sh/network-topology-source: label` and `<label>: <value>`, with `tierName` the label.

`discover` gives the HyperNodes the nodes call for; `plan_sync` compares them with those that
exist and says what to create, update and delete: only HyperNodes labelled as discovered from
labels are ever touched, so hand-written ones are left alone. `node_counts` is each HyperNode's
`status.nodeCount`. The controller's topology keeper (a shell) runs these and writes the result.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from shared.volcano.hypernodes import API_VERSION, parse_hyper_node, resolve_node_sets
from shared.volcano.keys import NETWORK_TOPOLOGY_SOURCE as SOURCE_LABEL
from shared.volcano.objects import KubeObject

CONFIGMAP_NAMESPACE = "volcano-system"
CONFIGMAP = "volcano-controller-configmap"
CONF_KEY = "volcano-controller.conf"
LABEL_SOURCE = "label"
MAX_TYPE_NAME = 20  # as Volcano: longer topology type names are skipped
MAX_NAME = 253
Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class LabelDiscovery:
    """Topology type -> its node label keys, tier 1 first (the node's own label left out)."""

    types: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    problems: tuple[str, ...] = ()  # entries skipped, each saying why (for a warning)


def parse_discovery(text: str | None) -> LabelDiscovery | None:
    """The enabled label source of `volcano-controller.conf`, or None when there is none."""
    if not text:
        return None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        return LabelDiscovery(problems=(f"{CONF_KEY} does not parse: {error}",))
    entries = raw.get("networkTopologyDiscovery") if isinstance(raw, Mapping) else None
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, Mapping) or entry.get("source") != LABEL_SOURCE:
            continue
        if str(entry.get("enabled", False)).lower() != "true":
            return None
        config = entry.get("config") if isinstance(entry.get("config"), Mapping) else {}
        return _label_types(config.get("networkTopologyTypes"))  # type: ignore[union-attr]
    return None


def _label_types(raw: Any) -> LabelDiscovery:
    types: dict[str, tuple[str, ...]] = {}
    problems: list[str] = []
    for name, labels in (raw or {}).items() if isinstance(raw, Mapping) else ():
        keys = [str(item.get("nodeLabel") or "") for item in labels or () if isinstance(item, Mapping)]
        if len(str(name)) > MAX_TYPE_NAME:
            problems.append(f"topology type {name!r}: its name is longer than {MAX_TYPE_NAME} characters")
        elif not keys or any(not key for key in keys) or len(set(keys)) != len(keys):
            problems.append(f"topology type {name!r}: every nodeLabel must be given, once")
        else:
            # Listed top tier first, the node's own label last: tier 1 is the one above the node.
            types[str(name)] = tuple(reversed(keys[:-1]))
    return LabelDiscovery(types, tuple(problems))


def _clean(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or "x"


def hyper_node_name(topology_type: str, tier: int, value: str) -> str:
    name = f"hypernode-{_clean(topology_type)}-tier{tier}-{_clean(value)}"
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(name.encode()).hexdigest()[:10]
        name = f"{name[: MAX_NAME - 11].rstrip('-')}-{digest}"
    return name


def discover(nodes: Sequence[tuple[str, Mapping[str, str]]], discovery: LabelDiscovery) -> dict[str, Json]:
    """HyperNode name -> the HyperNode the nodes' labels call for."""
    found: dict[str, tuple[int, str, str, set[str]]] = {}  # name -> (tier, label, value, members)
    for node, labels in sorted(nodes):
        for topology_type, keys in sorted(discovery.types.items()):
            member = node
            for index, key in enumerate(keys):
                value = labels.get(key)
                if value is None:
                    break
                name = hyper_node_name(topology_type, index + 1, value)
                found.setdefault(name, (index + 1, key, value, set()))[3].add(member)
                member = name
    return {name: _manifest(name, *entry) for name, entry in found.items()}


def _manifest(name: str, tier: int, key: str, value: str, members: set[str]) -> Json:
    kind = "Node" if tier == 1 else "HyperNode"
    return {
        "apiVersion": API_VERSION,
        "kind": "HyperNode",
        "metadata": {"name": name, "labels": {SOURCE_LABEL: LABEL_SOURCE, key: value}},
        "spec": {
            "tier": tier,
            "tierName": key,
            "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in sorted(members)],
        },
    }


@dataclass(frozen=True, slots=True)
class SyncPlan:
    create: tuple[Json, ...] = ()
    update: tuple[Json, ...] = ()  # the desired object with the existing resourceVersion
    delete: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()  # names a hand-written HyperNode already has


def discovered(obj: Mapping[str, Any]) -> bool:
    return KubeObject(obj).label(SOURCE_LABEL) == LABEL_SOURCE


def plan_sync(desired: Mapping[str, Json], existing: Sequence[Mapping[str, Any]]) -> SyncPlan:
    by_name = {str(KubeObject(obj).meta.get("name")): obj for obj in existing}
    create, update, conflicts = [], [], []
    for name, want in sorted(desired.items()):
        held = by_name.get(name)
        if held is None:
            create.append(want)
        elif not discovered(held):
            conflicts.append(name)
        elif held.get("spec") != want["spec"] or _labels(held) != want["metadata"]["labels"]:
            meta = {
                **want["metadata"],
                "resourceVersion": KubeObject(held).meta.get("resourceVersion"),
            }
            update.append({**want, "metadata": meta, "status": held.get("status") or {}})
    delete = sorted(name for name, obj in by_name.items() if discovered(obj) and name not in desired)
    return SyncPlan(tuple(create), tuple(update), tuple(delete), tuple(conflicts))


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return KubeObject(obj).labels


def node_counts(
    hyper_nodes: Sequence[Mapping[str, Any]], nodes: Sequence[tuple[str, Mapping[str, str]]]
) -> dict[str, int]:
    """Each HyperNode's status.nodeCount: the nodes under it, through nested members."""
    infos = [parse_hyper_node(obj) for obj in hyper_nodes]
    sets = resolve_node_sets(infos, [name for name, _ in nodes], [labels for _, labels in nodes])
    return {name: len(members) for name, members in sets.items()}
