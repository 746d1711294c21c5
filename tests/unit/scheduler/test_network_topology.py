"""Network-topology-aware placement: a constrained gang is placed by a search over HyperNode
domains (smallest that holds it, tier by tier), partitions get domains of their own, lost pods
are replaced inside the gang's domain, and HyperNode bin packing fills the fullest domain first.

The cluster of Volcano's user guide: 8 nodes of 4 CPU; tier-1 HyperNodes s0 (node0-3) and s1
(node4-7) under the tier-2 s2.
"""

from __future__ import annotations

import pytest

from services.scheduler.core import ConfError, CyclePlan, GangInfo, SchedulerConf, TaskInfo, parse_conf
from services.scheduler.core.hypernodes import resolve_domains
from services.scheduler.core.network_topology import weights_of
from services.scheduler.core.snapshot_topology import (
    HyperNodeInfo,
    HyperNodeMember,
    SubGroupConstraint,
    TopologyConstraint,
)
from tests.unit.scheduler.builders import conf_with, gang, node, placed, plan, request, running, task

pytestmark = pytest.mark.unit

NODES = [node(f"node{i}", cpu="4", labels={"rack": f"r{i // 4}"}) for i in range(8)]
CPU4 = request("4", "1Gi")


def exact(*names: str, kind: str = "Node") -> tuple[HyperNodeMember, ...]:
    return tuple(HyperNodeMember(type=kind, exact=name) for name in names)


TREE = (
    HyperNodeInfo("s0", 1, "leaf", exact("node0", "node1", "node2", "node3")),
    HyperNodeInfo("s1", 1, "leaf", (HyperNodeMember(regex="^node[4-7]$"),)),
    HyperNodeInfo("s2", 2, "spine", exact("s0", "s1", kind="HyperNode")),
)


def conf(arguments: str = "") -> SchedulerConf:
    args = f", arguments: {{{arguments}}}" if arguments else ""
    return parse_conf(
        f"""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{{name: priority}}, {{name: gang}}, {{name: conformance}}]
- plugins: [{{name: predicates}}, {{name: proportion}}, {{name: nodeorder}}, {{name: binpack}},
            {{name: network-topology-aware{args}}}]
"""
    )


def job(
    name: str,
    size: int,
    topology: TopologyConstraint | None,
    *,
    min_member: int | None = None,
    req: object = CPU4,
    **fields: object,
) -> GangInfo:
    return gang(name, size, req, min_member=min_member, network_topology=topology, **fields)  # type: ignore[arg-type]


def hard(tier: int | None = None, name: str = "") -> TopologyConstraint:
    return TopologyConstraint("hard", tier, name)


def nodes_of(result: CyclePlan, gang_uid: str) -> set[str]:
    return {b.node for g in result.binds if g.gang_uid == gang_uid for b in g.binds}


def run(
    gangs: list[GangInfo], nodes: list = NODES, hyper: tuple = TREE, c: SchedulerConf | None = None
) -> CyclePlan:  # type: ignore[type-arg]
    return plan(nodes, gangs, conf=c or conf(), hyper_nodes=hyper)


def test_resolution_follows_nested_members_regex_and_labels() -> None:
    labelled = HyperNodeInfo(
        "by-label", 1, "leaf", (HyperNodeMember(labels={"matchLabels": {"rack": "r1"}}),)
    )
    loop_a = HyperNodeInfo("a", 3, "", exact("b", kind="HyperNode"))
    loop_b = HyperNodeInfo("b", 3, "", exact("a", kind="HyperNode"))
    names = [n.name for n in NODES]
    domains = resolve_domains((*TREE, labelled, loop_a, loop_b), names, [n.labels for n in NODES])
    assert domains.by_name["s0"].nodes == (0, 1, 2, 3)
    assert domains.by_name["s1"].nodes == (4, 5, 6, 7)
    assert domains.by_name["s2"].nodes == tuple(range(8))
    assert domains.by_name["by-label"].nodes == (4, 5, 6, 7)
    assert domains.by_name["a"].nodes == ()  # a cycle contributes no nodes
    assert domains.limit(hard(name="spine")) == 2


def test_hard_tier1_job_of_the_user_guide_runs_four_pods_inside_one_leaf() -> None:
    # 8 replicas, minAvailable 4, highestTierAllowed 1: the gang is ready with 4 pods in one
    # leaf; the other 4 cannot leave it, so they wait (Volcano's guide shows the same).
    busy = running(gang("busy", 1, request("1", "1Gi")), ["node0"])
    result = run([busy, job("nt", 8, hard(1), min_member=4)])
    assert nodes_of(result, "nt") == {"node4", "node5", "node6", "node7"}
    # the domain it was given travels with the binds (the PodGroup's job-allocated-hypernode)
    assert [g.hypernode for g in result.binds if g.gang_uid == "nt"] == ["s1"]


def test_hard_gang_goes_to_the_smallest_domain_that_holds_it() -> None:
    result = run([job("small", 3, hard(2))])
    assert len(nodes_of(result, "small")) == 3
    assert nodes_of(result, "small") <= {"node0", "node1", "node2", "node3"}  # a leaf, not spread
    result = run([job("wide", 6, hard(2))])
    assert len(nodes_of(result, "wide")) == 6  # needs the spine


def test_hard_gang_that_no_domain_can_hold_waits_and_says_why() -> None:
    blocker = running(gang("blocker", 2, CPU4), ["node0", "node4"])
    result = run([blocker, job("nt", 4, hard(1))])
    assert nodes_of(result, "nt") == set()
    verdict = result.verdict_for("nt")
    assert verdict is not None
    assert verdict.reason == "NetworkTopologyUnsatisfied"
    assert "no HyperNode of tier 1 or lower has room for the 4 pod(s) the job needs" in verdict.detail
    assert "has room for 3" in verdict.detail
    assert "Origin reason is: network topology" in verdict.message


def test_unknown_tier_name_is_named() -> None:
    result = run([job("nt", 2, hard(name="zone"))])
    verdict = result.verdict_for("nt")
    assert verdict is not None
    assert 'no HyperNode tier is named "zone"' in verdict.detail


def test_soft_takes_the_lowest_tier_that_fits_else_anywhere() -> None:
    soft = TopologyConstraint("soft")
    result = run([job("fits", 4, soft)])
    assert nodes_of(result, "fits") in ({f"node{i}" for i in range(4)}, {f"node{i}" for i in range(4, 8)})
    # Only a tier-1 domain in the topology and the gang needs 6 nodes: placed anyway.
    leaves_only = TREE[:2]
    result = run([job("spread", 6, soft)], hyper=leaves_only)
    assert len(nodes_of(result, "spread")) == 6


def test_partitions_each_land_inside_their_own_leaf() -> None:
    tasks = [
        task(f"nt-t0-{i}", CPU4, task_role="t0", labels={"volcano.sh/partition-id": str(i // 4)})
        for i in range(8)
    ]
    parted = gang(
        "nt", tasks=tasks, min_member=4, network_topology=hard(2),
        sub_groups=(SubGroupConstraint("t0", 4, 0, hard(1)),),
    )  # fmt: skip
    result = run([parted])
    by_partition: dict[str, set[str]] = {"0": set(), "1": set()}
    for uid, where in placed(result).items():
        by_partition[str(int(uid.rsplit("-", 1)[1]) // 4)].add(where)
    assert {frozenset(v) for v in by_partition.values()} == {
        frozenset(f"node{i}" for i in range(4)),
        frozenset(f"node{i}" for i in range(4, 8)),
    }


def test_a_partition_no_leaf_can_hold_stays_pending_and_is_explained() -> None:
    # Pods of 3 CPU, one per node; node0 has 2 CPU left, so s0 can take only 3 of a partition.
    tasks = [
        task(
            f"nt-t0-{i}", request("3", "1Gi"), task_role="t0", labels={"volcano.sh/partition-id": str(i // 4)}
        )
        for i in range(8)
    ]
    blocker = running(gang("blocker", 1, request("2", "1Gi")), ["node0"])
    parted = gang(
        "nt", tasks=tasks, min_member=8, network_topology=hard(2),
        sub_groups=(SubGroupConstraint("t0", 4, 0, hard(1)),),
    )  # fmt: skip
    result = run([blocker, parted])
    assert nodes_of(result, "nt") == set()
    verdict = result.verdict_for("nt")
    assert verdict is not None
    assert "no HyperNode of tier 1 or lower has room for partition 1 of task t0 (4 pod(s))" in verdict.detail
    assert "the best, s0, has room for 3" in verdict.detail


def test_replacements_of_lost_pods_stay_inside_the_gangs_domain() -> None:
    # 3 of 4 pods still run in s1; the lost one's replacement must land in s1 although s0 is
    # emptier and tier 2 would be allowed for a fresh gang.
    tasks: list[TaskInfo] = [
        task(f"nt-w-{i}", request("1", "1Gi"), node=f"node{4 + i}", status="Running") for i in range(3)
    ]
    tasks.append(task("nt-w-3", request("1", "1Gi")))
    repaired = gang("nt", tasks=tasks, min_member=4, phase="Running", network_topology=hard(2))
    result = run([repaired])
    assert placed(result)["nt-w-3"] in {"node4", "node5", "node6", "node7"}


def test_hypernode_bin_packing_fills_the_fuller_leaf_first() -> None:
    # node0 is busy: with bin packing a 2-pod tier-1 gang joins it in s0, leaving s1 whole.
    busy = running(gang("busy", 1, request("2", "1Gi")), ["node0"])
    result = run([busy, job("pair", 2, hard(1), req=request("4", "1Gi"))])
    assert nodes_of(result, "pair") <= {"node1", "node2", "node3"}


def test_normal_pods_prefer_nodes_of_fuller_hypernodes() -> None:
    # The user guide's third example: node0 holds a pod; a plain job's pods go to s0's nodes.
    busy = running(gang("busy", 1, CPU4), ["node0"])
    plain = job("plain", 2, None)
    result = run([busy, plain])
    assert nodes_of(result, "plain") <= {"node1", "node2", "node3"}
    without = run([busy, plain], c=conf("hypernode.binpack.normal-pod.enable: false"))
    assert len(nodes_of(without, "plain")) == 2


def test_without_hypernodes_constraints_change_nothing() -> None:
    result = plan(NODES, [job("nt", 8, hard(1))], conf=conf())
    assert len(nodes_of(result, "nt")) == 8


def test_plugin_arguments_are_read_with_volcanos_names_and_checked() -> None:
    weights = weights_of(
        conf(
            "weight: 10, hypernode.binpack.cpu: 5, hypernode.binpack.resources: nvidia.com/gpu, "
            "hypernode.binpack.resources.nvidia.com/gpu: 2, hypernode.binpack.normal-pod.fading: 0.5"
        )
    )
    assert weights.weight == 10
    assert weights.resources == (("cpu", 5), ("memory", 1), ("nvidia.com/gpu", 2))
    assert (weights.normal_pods, weights.fading, weights.enabled) == (True, 0.5, True)
    with pytest.raises(ConfError, match=r"hypernode\.binpack\.normal-pod\.enable"):
        conf("hypernode.binpack.normal-pod.enable: maybe")


def test_a_constrained_gang_does_not_preempt_for_room() -> None:
    # As Volcano's preempt and reclaim leave jobs with a network topology out (its gang-aware
    # variants do that), a starving hard gang waits for room in its domain instead of evicting
    # pods wherever the preempt action would find them.
    preempting = conf_with(
        "predicates", "nodeorder", "network-topology-aware", actions="enqueue, allocate, preempt"
    )
    lows = [running(gang(f"low{i}", 1, CPU4, priority=1), [f"node{i}"]) for i in range(8)]
    constrained = job("hi", 2, hard(1), priority=100)
    assert run([*lows, constrained], c=preempting).evictions == ()
    unconstrained = job("hi", 2, None, priority=100)
    assert len(run([*lows, unconstrained], c=preempting).evictions) == 2
