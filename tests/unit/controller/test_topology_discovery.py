"""HyperNode discovery from node labels, as Volcano's label source builds them, and nodeCount.

The configuration is Volcano's `networkTopologyDiscovery` in volcano-controller.conf: per
topology type, node labels from the top tier down, the node's own label last.
"""

from __future__ import annotations

from typing import Any

import pytest

from services.controller.core.topology_discovery import (
    discover,
    hyper_node_name,
    node_counts,
    parse_discovery,
    plan_sync,
)

pytestmark = pytest.mark.unit

CONF = """
networkTopologyDiscovery:
  - source: ufm
    enabled: true
    config: {endpoint: https://ufm-server:8080}
  - source: label
    enabled: true
    config:
      networkTopologyTypes:
        fabric:
          - nodeLabel: "example.com/spine"
          - nodeLabel: "example.com/rack"
          - nodeLabel: "kubernetes.io/hostname"
        a-name-longer-than-twenty:
          - nodeLabel: "x"
          - nodeLabel: "kubernetes.io/hostname"
"""


def nodes(layout: dict[str, tuple[str, str | None]]) -> list[tuple[str, dict[str, str]]]:
    found = []
    for name, (rack, spine) in layout.items():
        labels = {"kubernetes.io/hostname": name, "example.com/rack": rack}
        if spine is not None:
            labels["example.com/spine"] = spine
        found.append((name, labels))
    return found


CLUSTER = nodes({"n0": ("r0", "sp0"), "n1": ("r0", "sp0"), "n2": ("r1", "sp0"), "n3": ("r2", None)})


def members(obj: dict[str, Any]) -> list[str]:
    return [m["selector"]["exactMatch"]["name"] for m in obj["spec"]["members"]]


def test_the_label_source_is_read_with_its_label_order_and_bad_types_skipped() -> None:
    discovery = parse_discovery(CONF)
    assert discovery is not None
    assert discovery.types == {"fabric": ("example.com/rack", "example.com/spine")}
    assert discovery.problems == (
        "topology type 'a-name-longer-than-twenty': its name is longer than 20 characters",
    )
    assert (
        parse_discovery(
            CONF.replace(
                "enabled: true\n    config:\n      network", "enabled: false\n    config:\n      network"
            )
        )
        is None
    )
    assert parse_discovery(None) is None
    broken = parse_discovery("networkTopologyDiscovery: [")
    assert broken is not None
    assert "does not parse" in broken.problems[0]


def test_racks_become_tier1_and_spines_tier2_over_them() -> None:
    discovery = parse_discovery(CONF)
    assert discovery is not None
    found = discover(CLUSTER, discovery)
    r0, r1, r2 = (hyper_node_name("fabric", 1, rack) for rack in ("r0", "r1", "r2"))
    spine = hyper_node_name("fabric", 2, "sp0")
    assert sorted(found) == sorted([r0, r1, r2, spine])
    assert members(found[r0]) == ["n0", "n1"]
    assert members(found[r2]) == ["n3"]  # a node with no spine label stops at its rack
    assert members(found[spine]) == [r0, r1]
    assert found[spine]["spec"]["members"][0]["type"] == "HyperNode"
    assert (found[r0]["spec"]["tier"], found[r0]["spec"]["tierName"]) == (1, "example.com/rack")
    assert found[r0]["metadata"]["labels"] == {
        "volcano.sh/network-topology-source": "label",
        "example.com/rack": "r0",
    }
    assert r0 == "hypernode-fabric-tier1-r0"


def test_a_sync_creates_updates_and_deletes_only_discovered_hypernodes() -> None:
    discovery = parse_discovery(CONF)
    assert discovery is not None
    desired = discover(CLUSTER, discovery)
    r0, r1 = hyper_node_name("fabric", 1, "r0"), hyper_node_name("fabric", 1, "r1")
    stale = {**desired[r1], "spec": {**desired[r1]["spec"], "members": []}}
    stale["metadata"] = {**stale["metadata"], "resourceVersion": "7"}
    gone = {**desired[r0], "metadata": {**desired[r0]["metadata"], "name": "hypernode-fabric-tier1-old"}}
    handwritten = {"metadata": {"name": "s0"}, "spec": {"tier": 1, "members": []}}
    taken = {"metadata": {"name": hyper_node_name("fabric", 1, "r2")}, "spec": {"tier": 1}}
    plan = plan_sync(desired, [desired[r0], stale, gone, handwritten, taken])
    assert [o["metadata"]["name"] for o in plan.create] == [hyper_node_name("fabric", 2, "sp0")]
    assert [o["metadata"]["name"] for o in plan.update] == [r1]
    assert plan.update[0]["metadata"]["resourceVersion"] == "7"
    assert plan.delete == ("hypernode-fabric-tier1-old",)  # the hand-written s0 is left alone
    assert plan.conflicts == (hyper_node_name("fabric", 1, "r2"),)
    assert plan_sync(desired, list(desired.values())) == plan_sync({}, [])


def test_long_values_give_valid_names() -> None:
    name = hyper_node_name("fabric", 1, "R" * 300)
    assert len(name) <= 253
    assert name == name.lower()


def test_node_counts_follow_nested_members() -> None:
    hyper_nodes = [
        {"metadata": {"name": "s0"}, "spec": {"tier": 1, "members": [
            {"type": "Node", "selector": {"regexMatch": {"pattern": "^n[01]$"}}}]}},
        {"metadata": {"name": "s1"}, "spec": {"tier": 1, "members": [
            {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"example.com/rack": "r1"}}}}]}},
        {"metadata": {"name": "s2"}, "spec": {"tier": 2, "members": [
            {"type": "HyperNode", "selector": {"exactMatch": {"name": "s0"}}},
            {"type": "HyperNode", "selector": {"exactMatch": {"name": "s1"}}},
            {"type": "HyperNode", "selector": {"exactMatch": {"name": "missing"}}}]}},
    ]  # fmt: skip
    assert node_counts(hyper_nodes, CLUSTER) == {"s0": 2, "s1": 1, "s2": 3}
