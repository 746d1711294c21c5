"""preempt, second phase: inside a starving gang, a higher-priority pending task takes the place of
lower-priority running tasks of the same gang (Volcano's preemption between tasks of one job).

Each swap is decided and kept on its own, only when the preemptor then fits; a swap never deepens
the gang's shortfall (members overall, or of a task role, below both what it held and its
minimum), and nothing is evicted for a task that would still not fit.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from services.scheduler.core import CyclePlan, GangInfo, TaskInfo, parse_conf
from tests.unit.scheduler.builders import conf_with, gang, node, plan, request, task

pytestmark = pytest.mark.unit

CONF = conf_with("predicates", "nodeorder", actions="enqueue, allocate, preempt")


def worker(index: int, cpu: str = "2", **fields: object) -> TaskInfo:
    fields = {"node": "n1", "status": "Running", "priority": 1, "task_role": "worker", **fields}
    return task(f"job-worker-{index}", request(cpu), **fields)


def master(index: int = 0, cpu: str = "2", **fields: object) -> TaskInfo:
    fields = {"priority": 100, "task_role": "master", **fields}
    return task(f"job-master-{index}", request(cpu), **fields)


def job(tasks: Sequence[TaskInfo], min_member: int = 3, **fields: object) -> GangInfo:
    return gang("job", tasks=tasks, min_member=min_member, phase="Running", **fields)  # type: ignore[arg-type]


def evicted(result: CyclePlan) -> list[str]:
    return sorted(e.task_uid for e in result.evictions)


def nominated(result: CyclePlan) -> dict[str, str]:
    return {n.task_uid: n.node for n in result.nominations}


def test_pending_task_takes_the_place_of_a_lower_priority_task_of_its_gang() -> None:
    result = plan([node("n1", cpu="4")], [job([worker(0), worker(1), master()])], conf=CONF)
    assert evicted(result) == ["job-worker-1"]  # the least important first: reverse task order
    assert {(e.reason, e.preemptor_gang_uid, e.node) for e in result.evictions} == {("preempt", "job", "n1")}
    assert nominated(result) == {"job-master-0": "n1"}
    assert result.binds == ()


@pytest.mark.parametrize(
    ("tasks", "why"),
    [
        ([worker(0, priority=100), worker(1, priority=100), master()], "equal-priority"),
        ([worker(0, preemptable=False), worker(1, preemptable=False), master()], "not-preemptable"),
        ([worker(0, namespace="kube-system"), worker(1, namespace="kube-system"), master()], "kube-system"),
        ([worker(0), worker(1), master(preemption_policy="Never")], "policy-never"),
        ([worker(0), worker(1), master(cpu="8")], "would-still-not-fit"),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_no_swap_when_a_rule_forbids_it(tasks: list[TaskInfo], why: str) -> None:
    result = plan([node("n1", cpu="4")], [job(tasks)], conf=CONF)
    assert result.evictions == (), why
    assert result.nominations == (), why


def test_a_swap_never_deepens_the_gangs_shortfall() -> None:
    # The master needs both workers' room: two members out for one in, below the minimum of 3.
    result = plan([node("n1", cpu="4")], [job([worker(0), worker(1), master(cpu="4")])], conf=CONF)
    assert result.evictions == ()


def test_a_swap_never_takes_a_task_role_below_its_minimum() -> None:
    tasks = [worker(0), worker(1), master()]
    result = plan(
        [node("n1", cpu="4")],
        [job(tasks, min_task_member={"worker": 2, "master": 1})],
        conf=CONF,
    )
    assert result.evictions == ()


def test_each_swap_is_kept_on_its_own() -> None:
    # master-0 fits in worker-1's place; master-1 fits nowhere, which undoes nothing of the first.
    tasks = [worker(0), worker(1), master(0), master(1, cpu="8")]
    result = plan([node("n1", cpu="4")], [job(tasks, min_member=4)], conf=CONF)
    assert evicted(result) == ["job-worker-1"]
    assert nominated(result) == {"job-master-0": "n1"}


def test_swaps_go_on_while_they_succeed() -> None:
    tasks = [worker(0), worker(1), master(0), master(1)]
    result = plan([node("n1", cpu="4")], [job(tasks, min_member=4)], conf=CONF)
    assert evicted(result) == ["job-worker-0", "job-worker-1"]
    assert nominated(result) == {"job-master-0": "n1", "job-master-1": "n1"}


def test_no_swap_without_preempt_or_without_the_priority_plugin() -> None:
    gangs = [job([worker(0), worker(1), master()])]
    without_preempt = conf_with("predicates", "nodeorder", actions="enqueue, allocate, reclaim")
    assert plan([node("n1", cpu="4")], gangs, conf=without_preempt).evictions == ()
    no_priority = parse_conf(
        """
actions: "enqueue, allocate, preempt"
tiers:
- plugins: [{name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: nodeorder}]
"""
    )
    assert plan([node("n1", cpu="4")], gangs, conf=no_priority).evictions == ()


def test_a_task_that_fits_without_evicting_takes_no_siblings_place() -> None:
    # n2 has room for the master, but the gang cannot start (its third worker fits nowhere), so
    # the master stays pending rather than displacing a worker on n1.
    tasks = [worker(0), worker(1), master(), worker(2, cpu="8", status="Pending", node=None)]
    result = plan([node("n1", cpu="4"), node("n2", cpu="2")], [job(tasks, min_member=4)], conf=CONF)
    assert result.evictions == ()
    assert result.verdict_for("job") is not None
