"""allocate: gangs placed whole or not at all, Volcano's ordering, and every placement bounded.

Written from Volcano's documented behaviour (allocate action, gang plugin, priority plugin):
a gang binds only once minMember and every task's minimum are placed; a ready gang with tasks
left places them too; higher-priority gangs go first; capability holds at allocate time.
"""

from __future__ import annotations

import pytest

from services.scheduler.core import DEFAULT_CONF
from services.scheduler.core.snapshot import OtherPod
from tests.unit.scheduler.builders import (
    bound_gangs,
    conf_with,
    gang,
    node,
    placed,
    plan,
    queue,
    request,
    running,
    task,
)

pytestmark = pytest.mark.unit

NODES_ONLY = conf_with("predicates", "nodeorder")


def test_gang_that_fits_is_bound_whole_in_one_group() -> None:
    result = plan([node("n1"), node("n2")], [gang("job", 3)])
    assert bound_gangs(result) == ["job"]
    assert len(result.binds[0].binds) == 3
    assert result.verdicts == ()


def test_gang_larger_than_the_room_places_nothing_and_says_why() -> None:
    result = plan([node("n1", cpu="4")], [gang("six", 6)], conf=NODES_ONLY)
    assert result.binds == ()
    verdict = result.verdict_for("six")
    assert verdict is not None
    assert verdict.message == (
        "2/6 tasks in gang unschedulable: pod group is not ready, 6 Pending, 6 minAvailable; "
        "Pending: 2 Unschedulable, 4 Schedulable. Origin reason is six-worker-4: "
        "0/1 nodes are unavailable: 1 Insufficient cpu."
    )
    assert verdict.reason == "NotEnoughResources"
    assert verdict.condition_reason == "NotEnoughResources"
    assert verdict.fit_errors == "0/1 nodes are unavailable: 1 Insufficient cpu."


def test_verdict_is_queryable_by_job_name() -> None:
    result = plan([node("n1", cpu="1")], [gang("big", 2)], conf=NODES_ONLY)
    verdict = result.verdict_by_job("default", "big")
    assert verdict is not None
    assert verdict.gang_uid == "big"


def test_elastic_gang_runs_with_as_many_pods_as_fit() -> None:
    result = plan([node("n1", cpu="4")], [gang("mindspore", 8, min_member=1)], conf=NODES_ONLY)
    assert len(placed(result)) == 4
    assert result.verdicts == ()


@pytest.mark.parametrize(
    ("min_task_member", "expected_binds"),
    [({}, 2), ({"ps": 1, "worker": 1}, 0)],
    ids=["total-minimum-only", "per-task-minimum-unmet"],
)
def test_per_task_minimum_must_be_met_before_binding(
    min_task_member: dict[str, int], expected_binds: int
) -> None:
    tasks = [
        task("tf-ps-0", request("8"), task_role="ps"),
        task("tf-worker-0", task_role="worker"),
        task("tf-worker-1", task_role="worker"),
    ]
    result = plan(
        [node("n1", cpu="4")],
        [gang("tf", tasks=tasks, min_member=2, min_task_member=min_task_member)],
        conf=NODES_ONLY,
    )
    assert len(placed(result)) == expected_binds


def test_higher_priority_gang_is_placed_first() -> None:
    low = gang("low", 3, priority=1, age=100)
    high = gang("high", 3, priority=10)
    result = plan([node("n1", cpu="4")], [low, high], conf=NODES_ONLY)
    assert bound_gangs(result) == ["high"]


def test_older_gang_goes_first_at_equal_priority() -> None:
    result = plan([node("n1", cpu="3")], [gang("newer", 3, age=1), gang("older", 3, age=50)], conf=NODES_ONLY)
    assert bound_gangs(result) == ["older"]


def test_capability_is_enforced_at_allocate_not_only_at_enqueue() -> None:
    # Both gangs were admitted earlier (Inqueue); the queue holds 3 of its 4 CPUs already.
    busy = running(gang("busy", 3), ["n1"])
    result = plan(
        [node("n1", cpu="16"), node("n2", cpu="16")],
        [busy, gang("late", 2)],
        [queue("default", capability={"cpu": "4"})],
    )
    assert result.binds == ()
    verdict = result.verdict_for("late")
    assert verdict is not None
    assert verdict.reason == "QueueCapabilityExceeded"


def test_capability_of_a_parent_queue_bounds_its_children() -> None:
    queues = [
        queue("root"),
        queue("team", capability={"cpu": "2"}),
        queue("team-a", parent="team"),
        queue("team-b", parent="team"),
    ]
    gangs = [gang("a", 2, queue="team-a"), gang("b", 2, queue="team-b", age=1)]
    result = plan([node("n1", cpu="16")], gangs, queues, conf=conf_with("predicates", "capacity"))
    # queues of equal priority and share go in name order: team-a first, team-b finds team full
    assert bound_gangs(result) == ["a"]
    verdict = result.verdict_for("b")
    assert verdict is not None
    assert verdict.reason == "QueueCapabilityExceeded"


@pytest.mark.parametrize("state", ["Closed", "Closing"])
def test_closed_and_closing_queues_place_nothing_new(state: str) -> None:
    result = plan([node("n1")], [gang("job", 1)], [queue("default", state=state)])
    assert result.binds == ()
    verdict = result.verdict_for("job")
    assert verdict is not None
    assert verdict.reason == "QueueClosed"


def test_pending_gang_is_not_allocated_until_enqueued() -> None:
    result = plan([node("n1")], [gang("job", 1, phase="Pending")], conf=conf_with("predicates"))
    # enqueue is configured, so the gang is admitted and placed in the same cycle
    assert result.enqueued == ("job",)
    assert bound_gangs(result) == ["job"]


def test_without_enqueue_action_allocate_admits_pending_gangs() -> None:
    conf = conf_with("predicates", actions="allocate")
    result = plan([node("n1")], [gang("job", 1, phase="Pending")], conf=conf)
    assert result.enqueued == ("job",)
    assert bound_gangs(result) == ["job"]


def test_running_gang_replacement_pod_binds_when_it_fits() -> None:
    g = running(gang("job", 3), ["n1"])
    replacement = task("job-worker-3")
    g = type(g)(**{**{s: getattr(g, s) for s in g.__slots__}, "tasks": (*g.tasks, replacement)})
    result = plan([node("n1", cpu="8")], [g], conf=NODES_ONLY)
    assert placed(result) == {"job-worker-3": "n1"}


def test_gang_with_too_few_valid_tasks_is_not_placed() -> None:
    result = plan([node("n1")], [gang("job", 2, min_member=3)])
    assert result.binds == ()
    verdict = result.verdict_for("job")
    assert verdict is not None
    assert verdict.condition_reason == "NotEnoughTasks"
    assert verdict.message.endswith(
        "Origin reason is: Not enough valid tasks for gang-scheduling, valid: 2, min: 3"
    )


def test_gang_missing_pods_of_a_task_is_not_placed() -> None:
    tasks = [task("tf-ps-0", task_role="ps"), task("tf-worker-0", task_role="worker")]
    g = gang("tf", tasks=tasks, min_member=2, min_task_member={"ps": 1, "worker": 2})
    result = plan([node("n1")], [g], conf=NODES_ONLY)
    # minAvailable (2) is below the per-task sum (3): Volcano then ignores per-task minimums
    assert bound_gangs(result) == ["tf"]
    g = gang("tf", tasks=tasks, min_member=3, min_task_member={"ps": 1, "worker": 2})
    verdict = plan([node("n1")], [g], conf=NODES_ONLY).verdict_for("tf")
    assert verdict is not None
    assert verdict.condition_reason == "NotEnoughPodsOfTask"


def test_foreign_pods_take_room_on_their_node() -> None:
    result = plan(
        [node("n1", cpu="4"), node("n2", cpu="4")],
        [gang("job", 1, request("2"))],
        conf=conf_with("predicates"),  # no scoring: first fit in name order
        other_pods=(OtherPod("n1", request("3")),),
    )
    assert placed(result) == {"job-worker-0": "n2"}


def test_default_conf_spreads_by_least_requested() -> None:
    result = plan([node("n1"), node("n2")], [gang("job", 2)], conf=DEFAULT_CONF)
    assert sorted(placed(result).values()) == ["n1", "n2"]


@pytest.mark.parametrize(
    "conf_text",
    [
        conf_with("predicates", "binpack"),
        conf_with("predicates", "nodeorder"),
    ],
    ids=["binpack", "nodeorder-least-requested"],
)
def test_scoring_plugins_pack_or_spread(conf_text: object) -> None:
    from services.scheduler.core import SchedulerConf

    assert isinstance(conf_text, SchedulerConf)
    result = plan([node("n1"), node("n2")], [gang("job", 2)], conf=conf_text)
    nodes_used = set(placed(result).values())
    expected = 1 if conf_text.enabled("binpack") else 2
    assert len(nodes_used) == expected


def test_most_requested_weight_packs_like_binpack() -> None:
    from services.scheduler.core import parse_conf

    conf = parse_conf(
        """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: gang}]
- plugins:
  - {name: predicates}
  - name: nodeorder
    arguments: {leastrequested.weight: 0, balancedresource.weight: 0, mostrequested.weight: 1}
"""
    )
    result = plan([node("n1"), node("n2")], [gang("job", 3)], conf=conf)
    assert len(set(placed(result).values())) == 1


def test_binpack_prefers_the_fuller_node() -> None:
    half_full = running(gang("old", 2), ["n2"])
    result = plan(
        [node("n1"), node("n2")], [half_full, gang("new", 1)], conf=conf_with("predicates", "binpack")
    )
    assert placed(result) == {"new-worker-0": "n2"}


def test_higher_priority_tasks_of_a_gang_are_placed_first() -> None:
    tasks = [
        task("job-worker-0", request("2"), priority=1),
        task("job-worker-1", request("2"), priority=5),
    ]
    result = plan([node("n1", cpu="2")], [gang("job", tasks=tasks, min_member=1)], conf=NODES_ONLY)
    assert placed(result) == {"job-worker-1": "n1"}


def test_higher_priority_queue_is_served_first() -> None:
    # capacity orders queues by priority too, without proportion's deserved cap on each queue
    conf = conf_with("predicates", "capacity")
    queues = [queue("a"), queue("b", priority=10)]
    gangs = [
        gang("in-a", 1, request("2"), queue="a", age=100),
        gang("in-b", 1, request("2"), queue="b"),
    ]
    result = plan([node("n1", cpu="2")], gangs, queues, conf=conf)
    assert bound_gangs(result) == ["in-b"]


def test_naive_and_aware_creation_times_order_alike() -> None:
    from datetime import datetime

    older = gang("older", 2, created=datetime(2026, 1, 1, 11, 0))
    newer = gang("newer", 2, created=datetime(2026, 1, 1, 11, 30))
    result = plan([node("n1", cpu="2")], [newer, older], conf=NODES_ONLY)
    assert bound_gangs(result) == ["older"]
