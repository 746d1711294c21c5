"""preemptioncost: victims chosen by what their eviction loses, not by priority alone.

The pure cost (core/preemption_cost.py) and the victim choice it drives in preempt and reclaim
(actions/evict_cost.py): a gang many GPU-hours into its run survives where a fresh one is
evicted; a checkpoint makes the lost time short again; minRunningTime protects young gangs; a
budget holds the next eviction back and the starving gang's verdict says so; every choice is
explained with its victims, their cost and the alternatives passed over.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from services.scheduler.core import CyclePlan, DisruptionBudget, GangInfo, NodeInfo
from services.scheduler.core.config import ConfError, SchedulerConf, parse_conf
from services.scheduler.core.preemption_cost import (
    CostArgs,
    PastEviction,
    budget_left,
    gang_cost,
    held,
)
from tests.unit.scheduler.builders import NOW, conf_with, gang, node, plan, queue, request, running

pytestmark = pytest.mark.unit

GPU = "nvidia.com/gpu"


def conf(arguments: str = "", actions: str = "enqueue, allocate, preempt", more: str = "") -> SchedulerConf:
    return parse_conf(
        f"""
actions: "{actions}"
tiers:
- plugins: [{{name: priority}}, {{name: gang}}, {{name: conformance}}]
- plugins: [{{name: predicates}}, {{name: nodeorder}}, {{name: preemptioncost{arguments}}}{more}]
"""
    )


def gpu_node(name: str) -> NodeInfo:
    return node(name, cpu="8", extra={GPU: "1"})


def victim(name: str, on: str, hours: float, **annotations: str) -> GangInfo:
    started = NOW - timedelta(hours=hours)
    g = gang(
        name,
        1,
        request("4", **{GPU: "1"}),
        priority=1,
        created=started,
        annotations=annotations,
        task_fields={"started": started},
    )
    return running(g, [on])


def preemptor() -> GangInfo:
    return gang("urgent", 1, request("4", **{GPU: "1"}), priority=100)


def evicted_jobs(result: CyclePlan) -> list[str]:
    return sorted({e.task_uid.rsplit("-worker-", 1)[0] for e in result.evictions})


def test_a_long_running_job_survives_where_a_fresh_one_is_evicted() -> None:
    # The 20-hour run sits on the first node: priority-only choice takes it; the cost model does not.
    gangs = [victim("long", "n1", hours=20), victim("fresh", "n2", hours=0.1), preemptor()]
    nodes = [gpu_node("n1"), gpu_node("n2")]
    default = plan(nodes, gangs, conf=_priority_only())
    counted = plan(nodes, gangs, conf=conf())
    assert evicted_jobs(default) == ["long"]
    assert evicted_jobs(counted) == ["fresh"]
    assert [(n.task_uid, n.node) for n in counted.nominations] == [("urgent-worker-0", "n2")]


def _priority_only() -> SchedulerConf:
    return parse_conf(
        """
actions: "enqueue, allocate, preempt"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: nodeorder}]
"""
    )


def test_a_recent_checkpoint_makes_the_long_run_the_cheaper_victim() -> None:
    checkpoint = (NOW - timedelta(minutes=1)).isoformat()
    gangs = [
        victim("long", "n1", hours=20, **{"phalanx.io/last-checkpoint": checkpoint}),
        victim("fresh", "n2", hours=2),
        preemptor(),
    ]
    result = plan([gpu_node("n1"), gpu_node("n2")], gangs, conf=conf())
    assert evicted_jobs(result) == ["long"]


def test_min_running_time_protects_a_young_gang() -> None:
    gangs = [victim("young", "n1", hours=0.1), preemptor()]
    protected = plan([gpu_node("n1")], gangs, conf=conf(", arguments: {minRunningTime: 30m}"))
    assert protected.evictions == ()
    older = plan([gpu_node("n1")], gangs, conf=conf(", arguments: {minRunningTime: 5m}"))
    assert evicted_jobs(older) == ["young"]


def test_a_whole_gang_goes_and_no_more_gangs_than_needed() -> None:
    # A two-pod gang on n1 (cheap, fresh) and two one-pod long runs on n2: the cheapest set that
    # frees a 2-GPU node is the whole fresh gang, even though it is two pods.
    pair_started = NOW - timedelta(minutes=10)
    pair = running(
        gang(
            "pair",
            2,
            request("2", **{GPU: "1"}),
            priority=1,
            created=pair_started,
            task_fields={"started": pair_started},
        ),
        ["n1"],
    )
    a = victim("a", "n2", hours=10)
    b = victim("b", "n2", hours=12)
    big = gang("urgent", 1, request("4", **{GPU: "2"}), priority=100)
    nodes = [node("n1", cpu="8", extra={GPU: "2"}), node("n2", cpu="8", extra={GPU: "2"})]
    result = plan(nodes, [pair, a, b, big], conf=conf())
    assert evicted_jobs(result) == ["pair"]
    assert sorted(e.task_uid for e in result.evictions) == ["pair-worker-0", "pair-worker-1"]


def test_every_eviction_is_explained_with_victims_cost_and_alternatives() -> None:
    gangs = [victim("long", "n1", hours=20), victim("fresh", "n2", hours=0.5), preemptor()]
    result = plan([gpu_node("n1"), gpu_node("n2")], gangs, conf=conf())
    (note,) = result.preemptions
    assert note.gang_uid == "urgent"
    assert [v.job for v in note.victims] == ["default/fresh"]
    assert note.victims[0].cost == pytest.approx(0.5 * (1 + 0.1 * 4) + 0.01, abs=1e-3)
    ((other_node, other_victims, other_cost),) = note.alternatives
    assert (other_node, [v.job for v in other_victims]) == ("n1", ["default/long"])
    assert other_cost > note.cost
    assert "instead of default/long on n1" in note.message


def test_a_budget_holds_back_the_next_eviction_and_says_so() -> None:
    gangs = [victim("fresh", "n1", hours=1), preemptor()]
    budget = conf(", arguments: {queueMaxPods: 1, budgetWindow: 1h}")
    spent = ((("default", NOW - timedelta(minutes=20))),)
    held_back = plan([gpu_node("n1")], gangs, conf=budget, recent_evictions=spent)
    assert held_back.evictions == ()
    verdict = held_back.verdict_for("urgent")
    assert verdict is not None
    assert verdict.reason == "PreemptionBudget"
    assert "queue default's preemption budget has 0 pod(s) left" in verdict.message
    # An hour later the window has moved past the earlier eviction: the preemption goes ahead.
    later = plan(
        [gpu_node("n1")],
        gangs,
        conf=budget,
        recent_evictions=spent,
        now=NOW + timedelta(minutes=50),
    )
    assert evicted_jobs(later) == ["fresh"]


def test_the_cost_counts_from_the_checkpoint_and_weighs_gpus_cpus_and_pods() -> None:
    args = CostArgs()
    started = datetime(2026, 1, 1, 0, 0)
    pods = [held({"cpu": 4000, GPU: 2000}, started), held({"cpu": 4000, GPU: 2000}, started)]
    whole = gang_cost({}, pods, started, started + timedelta(hours=10), args)
    assert (whole.lost_hours, whole.gpus, whole.pods) == (10, 4, 2)
    assert whole.cost == pytest.approx(10 * (4 + 0.1 * 8) + 0.02)
    mark = {"phalanx.io/last-checkpoint": "2026-01-01T09:00:00Z"}
    since_checkpoint = gang_cost(mark, pods, started, started + timedelta(hours=10), args)
    assert since_checkpoint.lost_hours == pytest.approx(1)
    unreadable = gang_cost(
        {"phalanx.io/last-checkpoint": "yesterday"}, pods, started, started + timedelta(hours=10), args
    )
    assert unreadable.lost_hours == 10


def test_budgets_count_only_the_window_and_take_the_smaller_limit() -> None:
    args = CostArgs(queue_max_pods=10, queue_max_share=0.25, cluster_max_pods=3, window=timedelta(hours=1))
    history = [
        PastEviction("a", NOW - timedelta(minutes=5)),
        PastEviction("a", NOW - timedelta(hours=2)),  # outside the window
        PastEviction("b", NOW - timedelta(minutes=30)),
    ]
    left = budget_left(history, NOW, args, {"a": 7, "b": 40})
    assert left.cluster == 1
    assert left.queues == {"a": 1, "b": 9}  # a: 25% of 8 = 2, minus 1; b: min(10, 25% of 41) - 1
    assert left.allows({"a": 1}) is None
    assert "cluster-wide" in (left.allows({"a": 1, "b": 1}) or "")


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ("{minRunningTime: soon}", "minRunningTime"),
        ("{queueMaxShare: 1.5}", "queueMaxShare"),
        ("{clusterMaxPods: 2.5}", "clusterMaxPods"),
        ("{cpuWeight: -1}", "cpuWeight"),
        ("{budget: 3}", "budget"),
    ],
)
def test_bad_arguments_are_refused_naming_the_argument(arguments: str, named: str) -> None:
    with pytest.raises(ConfError, match=named):
        conf(f", arguments: {arguments}")


def test_a_disruption_budget_protects_the_cheaper_victim() -> None:
    protected = {"app": "protected"}
    fresh = victim("fresh", "n2", hours=0.1)
    fresh = replace(fresh, tasks=tuple(replace(t, labels=protected) for t in fresh.tasks))
    gangs = [victim("long", "n1", hours=20), fresh, preemptor()]
    keep = DisruptionBudget(
        namespace="default", name="keep", selector={"matchLabels": protected}, disruptions_allowed=0
    )
    with_pdb = conf(more=", {name: pdb}")
    result = plan([gpu_node("n1"), gpu_node("n2")], gangs, conf=with_pdb, budgets=(keep,))
    assert evicted_jobs(result) == ["long"]


def test_reclaim_takes_the_cheapest_gang_of_the_queue_over_its_share() -> None:
    reclaim = parse_conf(
        """
actions: "enqueue, allocate, reclaim"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: proportion}, {name: preemptioncost}]
"""
    )
    started = {"old": NOW - timedelta(hours=20), "new": NOW - timedelta(minutes=5)}
    # "new" is the older PodGroup, so Volcano's order (the younger gang first) would take "old".
    created = {"old": NOW - timedelta(minutes=1), "new": NOW - timedelta(days=1)}
    holders = [
        running(
            gang(
                name,
                1,
                request("2"),
                queue="q1",
                created=created[name],
                task_fields={"started": started[name]},
            ),
            ["n1"],
        )
        for name in ("old", "new")
    ]
    fair = gang("fair", 1, request("2"), queue="q2")
    queues = [queue("q1"), queue("q2")]
    counted = plan([node("n1", cpu="4")], [*holders, fair], queues, conf=reclaim)
    assert evicted_jobs(counted) == ["new"]
    assert {e.reason for e in counted.evictions} == {"reclaim"}
    volcano = conf_with("predicates", "proportion", actions="enqueue, allocate, reclaim")
    assert evicted_jobs(plan([node("n1", cpu="4")], [*holders, fair], queues, conf=volcano)) == ["old"]


def test_reclaim_passes_over_a_queue_whose_budget_is_spent_for_one_whose_is_not() -> None:
    reclaim = parse_conf(
        """
actions: "enqueue, allocate, reclaim"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins:
  - {name: predicates}
  - {name: proportion}
  - {name: preemptioncost, arguments: {queueMaxPods: 1}}
"""
    )

    def holder(name: str, queue_name: str, on: str, hours: float) -> GangInfo:
        since = NOW - timedelta(hours=hours)
        member = gang(name, 1, request("4"), queue=queue_name, created=since, task_fields={"started": since})
        return running(member, [on])

    gangs = [
        holder("fresh", "q1", "n1", 0.1),
        holder("long", "q2", "n2", 20),
        gang("fair", 1, request("2"), queue="q3"),  # q3 deserves 2 cpu, q1 and q2 3 each
    ]
    nodes = [node("n1", cpu="4"), node("n2", cpu="4")]
    queues = [queue("q1"), queue("q2"), queue("q3")]
    assert evicted_jobs(plan(nodes, gangs, queues, conf=reclaim)) == ["fresh"]
    spent = (("q1", NOW - timedelta(minutes=10)),)
    result = plan(nodes, gangs, queues, conf=reclaim, recent_evictions=spent)
    assert evicted_jobs(result) == ["long"]
