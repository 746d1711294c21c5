"""preempt: a starving gang takes room from lower-priority gangs of its own queue, gang-aware.

Volcano's preempt action with the priority, gang and conformance plugins, with Phalanx's
guarantees: victims only of lower priority in the same queue; a victim gang keeps at least its
minimum or goes whole; nothing is evicted for a gang that would still not fit; the freed room is
reserved for the preemptor (its nomination) so no other gang takes it and no new evictions
follow while the first ones are pending.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from services.scheduler.core import CyclePlan, GangInfo, TaskInfo
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
)

pytestmark = pytest.mark.unit

CONF = conf_with("predicates", "nodeorder", actions="enqueue, allocate, preempt")


def evicted(result: CyclePlan) -> list[str]:
    return sorted(e.task_uid for e in result.evictions)


def low(name: str = "low", size: int = 2, min_member: int | None = None, cpu: str = "2") -> GangInfo:
    return running(gang(name, size, request(cpu), min_member=min_member, priority=1), ["n1"])


def high(size: int = 1, cpu: str = "2", **fields: object) -> GangInfo:
    return gang("high", size, request(cpu), priority=100, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("victim_min", "expected_victims"),
    [(1, ["low-worker-1"]), (2, ["low-worker-0", "low-worker-1"])],
    ids=["victim-keeps-its-minimum", "victim-gang-evicted-whole"],
)
def test_victim_gang_keeps_its_minimum_or_goes_whole(victim_min: int, expected_victims: list[str]) -> None:
    result = plan([node("n1", cpu="4")], [low(min_member=victim_min), high()], conf=CONF)
    assert evicted(result) == expected_victims
    assert {e.reason for e in result.evictions} == {"preempt"}
    assert {e.preemptor_gang_uid for e in result.evictions} == {"high"}
    # the preemptor waits on the freed room: nominated, not bound yet
    assert [(n.task_uid, n.node) for n in result.nominations] == [("high-worker-0", "n1")]
    assert result.binds == ()


def test_nothing_is_evicted_for_a_preemptor_that_would_still_not_fit() -> None:
    result = plan([node("n1", cpu="4")], [low(), high(cpu="8")], conf=CONF)
    assert result.evictions == ()
    assert result.nominations == ()


def test_nothing_is_evicted_when_only_part_of_a_gang_could_be_made_room_for() -> None:
    same_priority = replace(running(gang("peer", 1, request("4"), priority=100), ["n2"]))
    result = plan(
        [node("n1", cpu="4"), node("n2", cpu="4")],
        [low(), same_priority, high(size=2, cpu="4")],
        conf=CONF,
    )
    assert result.evictions == ()


def test_gang_preemptor_takes_room_on_several_nodes() -> None:
    a = running(gang("a", 1, request("4"), priority=1), ["n1"])
    b = running(gang("b", 1, request("4"), priority=1), ["n2"])
    result = plan([node("n1", cpu="4"), node("n2", cpu="4")], [a, b, high(size=2, cpu="4")], conf=CONF)
    assert evicted(result) == ["a-worker-0", "b-worker-0"]
    assert sorted(n.node for n in result.nominations) == ["n1", "n2"]


@pytest.mark.parametrize(
    "victim_change",
    [
        {"priority": 100},
        {"queue": "other"},
    ],
    ids=["equal-priority", "other-queue"],
)
def test_only_lower_priority_gangs_of_the_same_queue_are_victims(
    victim_change: dict[str, object],
) -> None:
    victim = replace(low(), **victim_change)  # type: ignore[arg-type]
    result = plan([node("n1", cpu="4")], [victim, high()], [queue("default"), queue("other")], conf=CONF)
    assert result.evictions == ()


@pytest.mark.parametrize(
    "task_change",
    [
        {"preemptable": False},
        {"namespace": "kube-system"},
        {"priority_class_name": "system-node-critical"},
    ],
    ids=["not-preemptable", "kube-system", "critical-class"],
)
def test_protected_pods_are_never_victims(task_change: dict[str, object]) -> None:
    victim = low(min_member=1)
    victim = replace(victim, tasks=tuple(replace(t, **task_change) for t in victim.tasks))  # type: ignore[arg-type]
    result = plan([node("n1", cpu="4")], [victim, high()], conf=CONF)
    assert result.evictions == ()


def test_preemptor_with_preemption_policy_never_evicts_nothing() -> None:
    never = high(task_fields={"preemption_policy": "Never"})
    result = plan([node("n1", cpu="4")], [low(min_member=1), never], conf=CONF)
    assert result.evictions == ()


def test_capability_holds_after_preemption() -> None:
    # Evicting all of "low" frees 4 CPUs in the queue, but "high" asks for 6 of a 4 CPU cap.
    result = plan(
        [node("n1", cpu="8")],
        [low(), high(size=3, cpu="2")],
        [queue("default", capability={"cpu": "4"})],
        conf=CONF,
    )
    assert bound_gangs(result) == []
    assert result.evictions == ()


def _next_cycle(victims_status: str | None) -> list[GangInfo]:
    """The cycle after "high" preempted "low" on n1: victims releasing (or gone), high nominated."""
    victims = low()
    gangs: list[GangInfo] = []
    if victims_status is not None:
        gangs.append(replace(victims, tasks=tuple(replace(t, status=victims_status) for t in victims.tasks)))
    nominated: TaskInfo = replace(high().tasks[0], nominated_node="n1")
    gangs.append(replace(high(), tasks=(nominated,)))
    return gangs


def test_no_new_evictions_while_the_first_are_pending() -> None:
    bystander = running(gang("bystander", 2, request("2"), priority=1), ["n2"])
    gangs = [*_next_cycle("Releasing"), bystander]
    result = plan([node("n1", cpu="4"), node("n2", cpu="4")], gangs, conf=CONF)
    assert result.evictions == ()
    assert result.binds == ()
    assert [(n.task_uid, n.node) for n in result.nominations] == [("high-worker-0", "n1")]


def test_freed_room_is_reserved_for_the_preemptor() -> None:
    intruder = gang("intruder", 1, request("2"), priority=1000)
    gangs = [*_next_cycle(None), intruder]
    result = plan([node("n1", cpu="2")], gangs, conf=CONF)
    assert placed(result) == {"high-worker-0": "n1"}
    verdict = result.verdict_for("intruder")
    assert verdict is not None
    assert result.nominations == ()


def test_reservation_lapses_when_its_evictions_are_done() -> None:
    # "high" is nominated to n1, which is free now, but "high" cannot start (it needs 2 pods).
    blocked = replace(high(size=2, cpu="2"))
    blocked = replace(blocked, tasks=(replace(blocked.tasks[0], nominated_node="n1"), blocked.tasks[1]))
    result = plan([node("n1", cpu="2")], [blocked], conf=CONF)
    assert result.binds == ()
    assert result.nominations == ()
