"""pdb: preempt and reclaim never choose victims that a PodDisruptionBudget forbids.

Volcano's pdb plugin: a budget's status.disruptionsAllowed is what one cycle may take from the
pods its selector covers in its namespace; victims it protects are passed over for others, and
when no other victims suffice nothing is evicted.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from services.scheduler.core import CyclePlan, DisruptionBudget, GangInfo, parse_conf
from services.scheduler.core.disruption import covers
from tests.unit.scheduler.builders import conf_with, gang, node, plan, queue, request, running, task

pytestmark = pytest.mark.unit

PREEMPT = conf_with("predicates", "nodeorder", "pdb", actions="enqueue, allocate, preempt")
PREEMPT_WITHOUT_PDB = conf_with("predicates", "nodeorder", actions="enqueue, allocate, preempt")
RECLAIM = conf_with("predicates", "proportion", "pdb", actions="enqueue, allocate, reclaim")
PROTECTED = {"app": "protected"}


def budget(
    allowed: int, selector: dict[str, Any] | None = None, namespace: str = "default"
) -> DisruptionBudget:
    chosen = {"matchLabels": PROTECTED} if selector is None else selector
    return DisruptionBudget(namespace=namespace, name="keep", selector=chosen, disruptions_allowed=allowed)


def low(name: str, labels: dict[str, str] | None = None, *, age: int = 0, size: int = 1) -> GangInfo:
    fields = {"labels": labels} if labels else {}
    members = gang(name, size, request("2"), priority=1, age=age, task_fields=fields)
    return running(members, ["n1"])


def high(name: str = "high", cpu: str = "2") -> GangInfo:
    return gang(name, 1, request(cpu), priority=100)


def evicted(result: CyclePlan) -> list[str]:
    return sorted(e.task_uid for e in result.evictions)


def test_a_protected_victim_is_passed_over_for_an_unprotected_one() -> None:
    # "young" is the first victim by order (the younger gang goes first), but a budget covers it.
    gangs = [low("old", age=60), low("young", PROTECTED, age=0), high()]
    assert evicted(plan([node("n1")], gangs, conf=PREEMPT_WITHOUT_PDB)) == ["young-worker-0"]
    result = plan([node("n1")], gangs, conf=PREEMPT, budgets=(budget(0),))
    assert evicted(result) == ["old-worker-0"]
    assert [n.task_uid for n in result.nominations] == ["high-worker-0"]


@pytest.mark.parametrize(("allowed", "expected"), [(1, []), (2, ["p-worker-0", "p-worker-1"])])
def test_a_set_of_victims_never_takes_more_than_the_budget_allows(allowed: int, expected: list[str]) -> None:
    # The preemptor needs both 2-CPU tasks of the node; with one disruption allowed, nothing goes.
    gangs = [low("p", PROTECTED, size=2), high(cpu="4")]
    result = plan([node("n1")], gangs, conf=PREEMPT, budgets=(budget(allowed),))
    assert evicted(result) == expected
    assert [n.task_uid for n in result.nominations] == (["high-worker-0"] if expected else [])


def test_the_budget_is_shared_by_every_eviction_of_the_cycle() -> None:
    protected = [
        running(gang(f"p{i}", 1, request("4"), priority=1, task_fields={"labels": PROTECTED}), [f"n{i}"])
        for i in (1, 2)
    ]
    preemptors = [gang(f"h{i}", 1, request("4"), priority=100, age=i) for i in (1, 2)]
    result = plan([node("n1"), node("n2")], [*protected, *preemptors], conf=PREEMPT, budgets=(budget(1),))
    assert len(result.evictions) == 1


@pytest.mark.parametrize(("eviction_pending", "expected"), [(True, []), (False, ["p-worker-0"])])
def test_an_eviction_decided_earlier_and_not_yet_carried_out_counts_against_the_budget(
    eviction_pending: bool, expected: list[str]
) -> None:
    # n2's protected pod is Releasing: still pending (no status counts it yet), or terminating
    # (the budget's disruptionsAllowed already does).
    leaving = running(gang("gone", 1, request("1"), priority=1, task_fields={"labels": PROTECTED}), ["n2"])
    leaving = replace(
        leaving,
        tasks=tuple(replace(t, status="Releasing", eviction_pending=eviction_pending) for t in leaving.tasks),
    )
    gangs = [low("p", PROTECTED), leaving, high(cpu="4")]
    result = plan([node("n1"), node("n2", cpu="1")], gangs, conf=PREEMPT, budgets=(budget(1),))
    assert evicted(result) == expected


def test_without_the_plugin_or_with_its_switch_off_budgets_are_not_read() -> None:
    gangs = [low("p", PROTECTED), high(cpu="4")]
    switched_off = parse_conf(
        """
actions: "enqueue, allocate, preempt"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}, {name: pdb, enablePreemptable: false}]
- plugins: [{name: predicates}, {name: nodeorder}]
"""
    )
    for conf in (PREEMPT_WITHOUT_PDB, switched_off):
        assert evicted(plan([node("n1")], gangs, conf=conf, budgets=(budget(0),))) == ["p-worker-0"]


def test_reclaim_passes_over_protected_victims_too() -> None:
    hog_protected = running(
        gang("hog-a", 2, request("1"), min_member=1, queue="q1", task_fields={"labels": PROTECTED}), ["n1"]
    )
    hog_free = running(gang("hog-b", 2, request("1"), min_member=1, queue="q1", age=60), ["n1"])
    fair = gang("fair", 2, request("1"), queue="q2")
    queues = [queue("q1"), queue("q2")]
    result = plan([node("n1")], [hog_protected, hog_free, fair], queues, conf=RECLAIM, budgets=(budget(0),))
    assert evicted(result) == ["hog-b-worker-0", "hog-b-worker-1"]
    assert {e.reason for e in result.evictions} == {"reclaim"}


@pytest.mark.parametrize(
    ("selector", "namespace", "labels", "expected"),
    [
        ({"matchLabels": PROTECTED}, "default", PROTECTED, True),
        ({"matchLabels": PROTECTED}, "default", {"app": "other"}, False),
        ({"matchLabels": PROTECTED}, "elsewhere", PROTECTED, False),
        ({}, "default", {}, True),  # policy/v1: an empty selector covers every pod of the namespace
        (None, "default", PROTECTED, False),  # a null selector covers none
        ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, "default", PROTECTED, True),
    ],
)
def test_a_budget_covers_the_pods_its_selector_matches_in_its_namespace(
    selector: dict[str, Any] | None, namespace: str, labels: dict[str, str], expected: bool
) -> None:
    pdb = DisruptionBudget(namespace=namespace, name="keep", selector=selector, disruptions_allowed=0)
    assert covers(pdb, task("t", labels=labels)) is expected
