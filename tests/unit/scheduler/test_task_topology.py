"""task-topology: a job's annotations order its tasks and steer them towards or away from the
nodes holding its other tasks (Volcano's task-topology plugin, its cheap part).

volcano.sh/task-topology-affinity and -anti-affinity hold groups of task names ("ps,worker;x");
a group of several relates those tasks to each other, a group of one a task's pods to each other.
volcano.sh/task-topology-task-order lists task names to place first. The node bonus is weighted
by the plugin argument task-topology.weight.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from services.scheduler.core import ConfError, GangInfo, SchedulerConf, TaskInfo, parse_conf
from tests.unit.scheduler.builders import gang, node, placed, plan, request, task

pytestmark = pytest.mark.unit


def topology_conf(extra: str = "", nodeorder: bool = False) -> SchedulerConf:
    plugins = (
        "{name: predicates}, {name: task-topology" + (f", arguments: {{{extra}}}" if extra else "") + "}"
    )
    if nodeorder:
        plugins += ", {name: nodeorder}"
    return parse_conf(
        f"""
actions: "enqueue, allocate"
tiers:
- plugins: [{{name: priority}}, {{name: gang}}, {{name: conformance}}]
- plugins: [{plugins}]
"""
    )


def member(role: str, index: int, **fields: object) -> TaskInfo:
    return task(f"tf-{role}-{index}", request("1"), task_role=role, **fields)


def tf(tasks: Sequence[TaskInfo], annotations: Mapping[str, str], min_member: int = 1) -> GangInfo:
    return gang("tf", tasks=tasks, min_member=min_member, phase="Running", annotations=dict(annotations))


NODES = [node("n1"), node("n2"), node("n3")]
PS_ON_N2 = member("ps", 0, node="n2", status="Running")


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({}, "n1"),  # no topology: first fit in name order
        ({"volcano.sh/task-topology-affinity": "ps,worker"}, "n2"),  # joins the ps
        ({"volcano.sh/task-topology-anti-affinity": "ps,worker"}, "n1"),  # keeps away from it
        ({"volcano.sh/task-topology-affinity": "ps,chief"}, "n1"),  # names a task it lacks: ignored
        ({"volcano.sh/task-topology-affinity": "worker,worker"}, "n1"),  # a task twice: ignored
    ],
    ids=["none", "affinity", "anti-affinity", "unknown-task", "duplicate-task"],
)
def test_workers_prefer_nodes_by_their_relation_to_the_ps(annotations: dict[str, str], expected: str) -> None:
    gangs = [tf([PS_ON_N2, member("worker", 0), member("worker", 1)], annotations)]
    result = plan(NODES, gangs, conf=topology_conf())
    assert placed(result) == {"tf-worker-0": expected, "tf-worker-1": expected}


def test_anti_affinity_of_a_task_with_itself_spreads_its_pods() -> None:
    gangs = [
        tf([member("worker", i) for i in range(3)], {"volcano.sh/task-topology-anti-affinity": "worker"})
    ]
    result = plan(NODES, gangs, conf=topology_conf())
    assert sorted(placed(result).values()) == ["n1", "n2", "n3"]


def test_affinity_of_a_task_with_itself_gathers_its_pods() -> None:
    gangs = [
        tf(
            [member("worker", 0, node="n3", status="Running"), member("worker", 1), member("worker", 2)],
            {"volcano.sh/task-topology-affinity": "worker"},
        )
    ]
    result = plan(NODES, gangs, conf=topology_conf(nodeorder=True))  # nodeorder alone would spread
    assert placed(result) == {"tf-worker-1": "n3", "tf-worker-2": "n3"}


@pytest.mark.parametrize(
    ("order", "first"),
    [(None, "tf-ps-0"), ("worker,ps", "tf-worker-0"), ("ps,worker", "tf-ps-0")],
    ids=["by-name", "workers-first", "ps-first"],
)
def test_task_order_annotation_decides_which_task_takes_the_last_room(order: str | None, first: str) -> None:
    annotations = {"volcano.sh/task-topology-task-order": order} if order else {}
    gangs = [tf([member("ps", 0), member("worker", 0)], annotations)]
    result = plan([node("n1", cpu="1")], gangs, conf=topology_conf())
    assert list(placed(result)) == [first]


@pytest.mark.parametrize(("weight", "expected"), [("1", "n1"), ("10", "n2")])
def test_weight_sets_how_much_the_relation_counts_against_nodeorder(weight: str, expected: str) -> None:
    # Eight tasks: one affine task on n2 is worth 100/8 times the weight, against nodeorder's preference
    # for the emptier n1 (about 25 points).
    finished = [member("worker", i, status="Succeeded") for i in range(1, 7)]
    gangs = [
        tf([PS_ON_N2, member("worker", 0), *finished], {"volcano.sh/task-topology-affinity": "ps,worker"})
    ]
    result = plan(NODES[:2], gangs, conf=topology_conf(f"task-topology.weight: {weight}", nodeorder=True))
    assert placed(result) == {"tf-worker-0": expected}


def test_configuration_accepts_the_weight_and_nothing_else() -> None:
    assert topology_conf("task-topology.weight: 5").argument("task-topology", "task-topology.weight", 1) == 5
    refused = r"unknown argument 'task-topology\.speed' for plugin 'task-topology'"
    with pytest.raises(ConfError, match=refused):
        topology_conf("task-topology.speed: 5")
