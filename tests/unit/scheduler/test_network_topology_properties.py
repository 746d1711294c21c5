"""Property tests of network-topology placement over random topologies and workloads.

For any two-tier topology (leaves of random sizes under spines), nodes partly used, and a mix of
hard, soft and unconstrained gangs in one cycle: no node's allocatable is exceeded, every gang is
bound whole or not at all, every hard gang's pods lie inside one HyperNode of a tier no higher than
its limit (the one the plan names), and every partition of a partitioned gang inside one leaf.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.scheduler.core import GangInfo, parse_conf, plan_cycle
from services.scheduler.core.hypernodes import resolve_domains
from services.scheduler.core.snapshot_topology import (
    HyperNodeInfo,
    HyperNodeMember,
    SubGroupConstraint,
    TopologyConstraint,
)
from tests.unit.scheduler.builders import gang, node, request, running, snapshot, task

pytestmark = pytest.mark.unit

CONF = parse_conf(
    """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}, {name: binpack},
            {name: network-topology-aware}]
"""
)


@st.composite
def cases(draw: st.DrawFn) -> tuple[object, ...]:
    leaf_sizes = draw(st.lists(st.integers(1, 4), min_size=2, max_size=6))
    per_spine = draw(st.integers(1, 3))
    nodes, hyper, leaves = [], [], []
    for index, size in enumerate(leaf_sizes):
        names = [f"n{index}-{i}" for i in range(size)]
        nodes += [node(name, cpu="4") for name in names]
        leaves.append(f"leaf{index}")
        members = tuple(HyperNodeMember(exact=name) for name in names)
        hyper.append(HyperNodeInfo(f"leaf{index}", 1, "leaf", members))
    for start in range(0, len(leaves), per_spine):
        under = tuple(
            HyperNodeMember(type="HyperNode", exact=name) for name in leaves[start : start + per_spine]
        )
        hyper.append(HyperNodeInfo(f"spine{start}", 2, "spine", under))
    gangs: list[GangInfo] = []
    busy_nodes = st.lists(st.sampled_from([n.name for n in nodes]), max_size=4, unique=True)
    for index, where in enumerate(draw(busy_nodes)):
        gangs.append(running(gang(f"busy{index}", 1, request(str(draw(st.integers(1, 4))), "1Gi")), [where]))
    for index in range(draw(st.integers(1, 6))):
        mode = draw(st.sampled_from(["hard", "soft", "none", "parted"]))
        size = draw(st.integers(1, 6))
        cpu = str(draw(st.integers(1, 4)))
        limit = draw(st.integers(1, 2))
        name = f"g{index}"
        if mode == "parted":
            parts = draw(st.integers(1, 3))
            tasks = [
                task(
                    f"{name}-t-{i}",
                    request(cpu, "1Gi"),
                    task_role="t",
                    labels={"volcano.sh/partition-id": str(i // size)},
                )
                for i in range(parts * size)
            ]
            sub = (SubGroupConstraint("t", size, 0, TopologyConstraint("hard", 1)),)
            gangs.append(
                gang(name, tasks=tasks, network_topology=TopologyConstraint("hard", 2), sub_groups=sub)
            )
        else:
            constraint = None if mode == "none" else TopologyConstraint(mode, limit)
            gangs.append(gang(name, size, request(cpu, "1Gi"), network_topology=constraint))
    return nodes, tuple(hyper), gangs


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_constrained_gangs_stay_in_their_domains_and_nothing_overflows(case: tuple[object, ...]) -> None:
    nodes, hyper, gangs = case
    shot = snapshot(nodes, gangs, hyper_nodes=hyper)  # type: ignore[arg-type]
    result = plan_cycle(shot, CONF)
    names = [n.name for n in shot.nodes]
    domains = resolve_domains(shot.hyper_nodes, names, [n.labels for n in shot.nodes])
    by_name = {g.uid: g for g in shot.gangs}
    requests = {t.uid: t.request for g in shot.gangs for t in g.tasks}
    used: Counter[str] = Counter()
    for g in shot.gangs:
        for t in g.tasks:
            if t.node:
                used[t.node] += t.request.get("cpu", 0)
    for placed in result.binds:
        info = by_name[placed.gang_uid]
        assert len(placed.binds) >= info.min_member  # whole or nothing
        where = {b.node for b in placed.binds}
        for b in placed.binds:
            used[b.node] += requests[b.task_uid].get("cpu", 0)
        limit = info.network_topology
        if limit is not None and limit.hard:
            domain = domains.by_name[placed.hypernode]
            assert domain.tier <= (limit.highest_tier or 2)
            assert {names.index(n) for n in where} <= domain.node_set
        for group in info.sub_groups:
            parts: dict[str, set[str]] = {}
            for b in placed.binds:
                label = next(
                    t.labels.get("volcano.sh/partition-id", "") for t in info.tasks if t.uid == b.task_uid
                )
                parts.setdefault(label, set()).add(b.node)
            for part in parts.values():
                assert any({names.index(n) for n in part} <= d.node_set for d in domains.all if d.tier == 1)
            assert group.name == "t"
    for name, cpu in used.items():
        assert cpu <= 4000, name
