"""A cycle that reuses the last cycle's node base plans exactly as one that builds it anew.

`state.NodeBase` (the Ready nodes in name order, their dense allocatable and its column sums) is
handed on by each plan and reused by the next cycle while the snapshot's nodes are the same
object and the resource names the same. Whatever came before, the plan must not change; a base
that no longer fits (other nodes, other names) must not be reused.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.scheduler.core import SchedulerConf, Snapshot, plan_cycle
from services.scheduler.core.node_base import NodeBase
from services.scheduler.core.settled import settled_of
from services.scheduler.core.vectors import ResourceSpace
from tests.unit.scheduler.builders import gang, node, snapshot
from tests.unit.scheduler.test_properties import snapshots

pytestmark = pytest.mark.unit


def _with_sums(cluster: Snapshot) -> Snapshot:
    return replace(cluster, settled=settled_of(cluster.gangs, {q.name for q in cluster.queues}))


# Each example plans up to six cycles: fewer examples than the one-cycle properties keep it
# well inside the suite's per-test timeout on a loaded machine.
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(snapshots(), min_size=2, max_size=3), st.booleans(), st.booleans())
def test_a_kept_base_plans_as_a_new_one_after_any_previous_cycles(
    drawn: list[tuple[Snapshot, SchedulerConf]], same_nodes: bool, summed: bool
) -> None:
    """Cycles in a row on the same nodes (as snapshot_cache.py keeps them), with the settled
    gangs' sums or without, each handed the last plan's base, plan as if each built anew."""
    conf = drawn[0][1]
    nodes = drawn[0][0].nodes
    kept = None
    for cluster, _ in drawn:
        if same_nodes:
            cluster = replace(cluster, nodes=nodes)
        if summed:
            cluster = _with_sums(cluster)
        plan = plan_cycle(cluster, conf, kept)
        assert plan == plan_cycle(cluster, conf)
        kept = plan.node_base


def test_a_base_is_reused_only_for_the_same_nodes_in_the_same_names() -> None:
    nodes = (node("n1"), node("n0"), replace(node("n2"), ready=False))
    space = ResourceSpace(["cpu", "memory"])
    base = NodeBase.of(space, nodes)
    assert [n.name for n in base.nodes] == ["n0", "n1"]  # Ready only, in name order
    assert base.total == [sum(column) for column in zip(*base.allocatable, strict=True)]
    assert NodeBase.kept_or_new(base, space, nodes) is base
    assert NodeBase.kept_or_new(base, space, tuple(nodes)[:2]) is not base
    assert NodeBase.kept_or_new(base, ResourceSpace(["cpu", "nvidia.com/gpu"]), nodes) is not base


def test_the_settled_holdings_are_taken_off_again_only_where_they_changed() -> None:
    nodes = (node("n0"), node("n1"))
    space = ResourceSpace(["cpu", "memory"])
    base = NodeBase.of(space, nodes)
    cpu = space.index["cpu"]
    first = {"n0": {"cpu": 1000}, "n1": {"cpu": 500}}
    idle = base.idle_after(first, space.index)
    assert [v[cpu] for v in idle] == [3000, 3500]
    second = {"n0": first["n0"], "n1": {"cpu": 2000}}  # n0's holding kept, n1's changed
    assert [v[cpu] for v in base.idle_after(second, space.index)] == [3000, 2000]
    assert [v[cpu] for v in base.idle_after({}, space.index)] == [4000, 4000]  # all gone
    assert base.allocatable[0][cpu] == 4000  # the base's own vectors are never written


def test_the_next_cycle_of_an_unchanged_cluster_reuses_the_base() -> None:
    cluster = snapshot([node("n0"), node("n1")], [gang("g", 2)])
    plan = plan_cycle(cluster)
    again = plan_cycle(replace(cluster, gangs=()), kept=plan.node_base)
    assert again.node_base is plan.node_base
