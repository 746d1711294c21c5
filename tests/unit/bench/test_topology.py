"""The network-topology scenarios: three tiers of HyperNodes over the nodes, a third of the Jobs
hard, a third soft, and how the placement is judged at the end."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.bench import topology, workloads
from phalanx.bench.topology import HARD, PLAIN, SOFT, TopologyLoad
from phalanx.bench.workloads import SCENARIOS

pytestmark = pytest.mark.unit

LOAD = TopologyLoad(leaf=2, leaves_per_spine=2)
NODES = [f"bench-node-{i}" for i in range(8)]  # leaves: (0,1) (2,3) | (4,5) (6,7); sorted by name


def test_the_scenario_is_the_issues_three_tier_cluster() -> None:
    topo = SCENARIOS["topo"]
    assert topo.nodes.count == 1_024
    assert topo.topology is not None
    made = topology.hyper_nodes(topology.node_names(1_024), topo.topology)
    tiers = [o["spec"]["tier"] for o in made]
    assert (tiers.count(1), tiers.count(2), tiers.count(3)) == (64, 4, 1)
    assert {len(o["spec"]["members"]) for o in made if o["spec"]["tier"] == 1} == {16}


def test_a_third_of_the_jobs_are_hard_a_third_soft_and_the_control_has_none() -> None:
    modes = [topology.mode_of(TopologyLoad(), i) for i in range(6)]
    assert modes == [HARD, SOFT, PLAIN, HARD, SOFT, PLAIN]
    assert workloads.job(SCENARIOS["topo"], "j00000")["spec"]["networkTopology"] == {
        "mode": "hard",
        "highestTierAllowed": 1,
    }
    assert "networkTopology" not in workloads.job(SCENARIOS["topo"], "j00002")["spec"]
    assert "networkTopology" not in workloads.job(SCENARIOS["topo-flat"], "j00000")["spec"]


def test_the_scheduler_conf_switches_hypernode_bin_packing() -> None:
    assert "weight: 10" in topology.scheduler_conf("", TopologyLoad())
    assert "normal-pod.enable: false" in topology.scheduler_conf("", TopologyLoad(binpack=False))
    assert topology.scheduler_conf("base", None) == "base"


def pod(job: str, node: str | None) -> dict[str, Any]:
    containers = [{"resources": {"requests": {"cpu": "4"}}}]
    return {
        "metadata": {"labels": {"volcano.sh/job-name": job}},
        "spec": {"nodeName": node, "containers": containers},
    }


def test_placement_is_judged_by_the_lowest_tier_holding_each_gang_and_leaf_fragmentation() -> None:
    leaves = topology.leaves_of(NODES, LOAD)
    (n0, n1), (n2, n3), (_, n5), (n6, _) = (leaves[f"leaf-{i}"] for i in range(4))
    pods = [
        pod("j00000", n0), pod("j00000", n1),  # hard, inside a leaf
        pod("j00003", n2), pod("j00003", n6),  # hard, across spines: a violation
        pod("j00006", None), pod("j00006", None),  # hard, not placed
        pod("j00001", n3), pod("j00001", n2),  # soft, one leaf
        pod("j00002", n5),  # plain
    ]  # fmt: skip
    modes = {"j00000": HARD, "j00003": HARD, "j00006": HARD, "j00001": SOFT, "j00002": PLAIN}
    cpu = dict.fromkeys(NODES, 8000)  # two pods of 4 CPU per node, but n3 holds one
    cpu[n3] = 4000
    found = topology.judge(pods, NODES, LOAD, modes, cpu)
    assert (found.hard_gangs, found.hard_placed, found.hard_outside_tier) == (3, 2, 1)
    assert found.soft_tiers == {1: 1}
    assert found.plain_tiers == {1: 1}
    # every leaf has a used node; leaf-2 and leaf-3 also a free one
    assert (found.fragmented_leaves, found.free_leaves, found.leaves) == (2, 0, 4)
    # by CPU: leaf-1 is full (n2 holds two pods, n3 one); the others have room for a gang of 2
    assert (found.full_leaves, found.partly_used_leaves) == (1, 3)
    assert found.leaves_holding_a_gang == 3
    assert any("| 1 / 3 / 0 |" in line for line in topology.lines(found, LOAD))
