"""Property tests: the core's invariants over random clusters, workloads and configurations.

For any snapshot (built by letting the core itself place earlier work, so that it is
consistent) and any of several configurations: no node's allocatable is exceeded, no queue's
capability is exceeded, every gang is bound whole (its minimum and per-task minimums) or not at
all, no pod is bound twice or bound when it is not pending, evictions leave victim gangs at or
above their minimum or empty and are made only for a preemptor that then reaches its minimum
(or, inside one gang, only for swaps that leave it no further below its minimum),
and the plan is the same for the same input, whatever order the input lists things in.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.scheduler.core import (
    DEFAULT_CONF,
    CyclePlan,
    GangInfo,
    NodeInfo,
    QueueInfo,
    SchedulerConf,
    Snapshot,
    TaskInfo,
    parse_conf,
    plan_cycle,
)
from shared.domain.resources import Resources
from tests.unit.scheduler.builders import FULL_CONF, NOW, conf_with

pytestmark = pytest.mark.unit

CONFS = [
    DEFAULT_CONF,
    FULL_CONF,
    conf_with("predicates", "capacity", "binpack", actions="enqueue, allocate, backfill, reclaim"),
    conf_with("predicates", "drf", actions="allocate, preempt, backfill"),
    parse_conf(
        'actions: "enqueue, allocate, preempt, reclaim"\n'
        "tiers:\n- plugins: [{name: priority}, {name: gang}]\n"
        "- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}]"
    ),
    # Reservation backfill (docs/backfill.md): the same invariants hold around reservations.
    parse_conf(
        'actions: "enqueue, allocate, backfill"\n'
        "tiers:\n- plugins: [{name: priority}, {name: gang}, {name: conformance}]\n"
        "- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]\n"
        "configurations:\n- name: backfill\n  arguments: {reservation: backfill, defaultRuntime: 1h}"
    ),
    parse_conf(
        'actions: "enqueue, allocate, backfill"\n'
        "tiers:\n- plugins: [{name: priority}, {name: gang}]\n"
        "- plugins: [{name: predicates}, {name: capacity}]\n"
        "configurations:\n- name: backfill\n  arguments: {reservation: strict}"
    ),
]
GPU = "nvidia.com/gpu"
HELD = ("Bound", "Running")


@st.composite
def nodes(draw: st.DrawFn) -> tuple[NodeInfo, ...]:
    count = draw(st.integers(1, 6))
    result = []
    for i in range(count):
        allocatable = {
            "cpu": draw(st.sampled_from([1000, 2000, 4000, 8000])),
            "memory": draw(st.sampled_from([2, 4, 8, 16])) * 2**30 * 1000,
            "pods": draw(st.integers(1, 8)) * 1000,
        }
        if draw(st.booleans()):
            allocatable[GPU] = draw(st.integers(0, 4)) * 1000
        taints = ()
        if draw(st.integers(0, 4)) == 0:
            taints = ({"key": "dedicated", "value": "x", "effect": "NoSchedule"},)
        result.append(
            NodeInfo(
                name=f"n{i}",
                allocatable=Resources(allocatable),
                labels={"zone": draw(st.sampled_from(["a", "b"])), "kubernetes.io/hostname": f"n{i}"},
                taints=taints,
                unschedulable=draw(st.integers(0, 6)) == 0,
                ready=draw(st.integers(0, 6)) != 0,
            )
        )
    return tuple(result)


@st.composite
def queues(draw: st.DrawFn) -> tuple[QueueInfo, ...]:
    names = ["q0", "q1", "q2"][: draw(st.integers(1, 3))]
    result = []
    for i, name in enumerate(names):
        capability = None
        if draw(st.booleans()):
            capability = Resources({"cpu": draw(st.sampled_from([1000, 3000, 6000, 12000]))})
        result.append(
            QueueInfo(
                name=name,
                weight=draw(st.integers(1, 3)),
                capability=capability,
                guarantee=Resources({"cpu": draw(st.sampled_from([0, 0, 1000]))}),
                deserved=draw(st.sampled_from([None, Resources({"cpu": 2000})])),
                reclaimable=draw(st.integers(0, 4)) != 0,
                state=draw(st.sampled_from(["Open"] * 5 + ["Closed", "Closing"])),
                parent="q0" if i > 0 and draw(st.booleans()) else None,
                priority=draw(st.integers(0, 1)),
            )
        )
    return tuple(result)


@st.composite
def gangs(
    draw: st.DrawFn, queue_names: list[str], prefix: str, unknown_queue: bool = True
) -> tuple[GangInfo, ...]:
    result = []
    for g in range(draw(st.integers(0, 6))):
        uid = f"{prefix}{g}"
        size = draw(st.integers(1, 5))
        roles = draw(st.sampled_from([("worker",), ("ps", "worker")]))
        cpu = draw(st.sampled_from([0, 250, 500, 1000, 2000, 3000]))
        request = {"pods": 1000}
        if cpu:
            request |= {"cpu": cpu, "memory": draw(st.sampled_from([1, 2, 4])) * 2**30 * 1000}
        if cpu and draw(st.integers(0, 4)) == 0:
            request[GPU] = 1000
        tasks = []
        for i in range(size):
            role = roles[i % len(roles)]
            tasks.append(
                TaskInfo(
                    uid=f"{uid}-{i}",
                    namespace=draw(st.sampled_from(["default", "default", "kube-system"])),
                    name=f"{uid}-{role}-{i}",
                    task_role=role,
                    request=Resources(request),
                    priority=draw(st.integers(0, 2)),
                    node_selector={"zone": "a"} if draw(st.integers(0, 4)) == 0 else {},
                    tolerations=({"operator": "Exists"},) if draw(st.booleans()) else (),
                    preemptable=draw(st.integers(0, 5)) != 0,
                )
            )
        min_task_member = {}
        if len(roles) > 1 and draw(st.booleans()):
            min_task_member = {"ps": 1, "worker": 1}
        min_resources = None
        if draw(st.booleans()):
            min_resources = Resources({"cpu": max(cpu, 1) * draw(st.integers(1, size))})
        result.append(
            GangInfo(
                uid=uid,
                namespace="default",
                name=f"job-{uid}",
                queue=draw(st.sampled_from([*queue_names, "missing"][: len(queue_names) + unknown_queue])),
                min_member=draw(st.integers(1, size)),
                min_task_member=min_task_member,
                min_resources=min_resources,
                priority=draw(st.integers(0, 3)),
                created=NOW - timedelta(seconds=draw(st.integers(0, 1000))),
                phase=draw(st.sampled_from(["Pending", "Inqueue"])),
                tasks=tuple(tasks),
            )
        )
    return tuple(result)


EVICTING_CONFS = [FULL_CONF, CONFS[2], CONFS[4]]


@st.composite
def snapshots(draw: st.DrawFn, contested: bool = False) -> tuple[Snapshot, SchedulerConf]:
    """A consistent snapshot: earlier work placed by the core itself, then new gangs arriving.

    `contested`: the newcomers are admitted, outrank the earlier work and the configuration
    preempts and reclaims, so that evictions are common rather than rare.
    """
    conf = draw(st.sampled_from(EVICTING_CONFS if contested else CONFS))
    cluster_nodes, cluster_queues = draw(nodes()), draw(queues())
    if contested:
        cluster_queues = tuple(replace(q, state="Open") for q in cluster_queues)
    names = [q.name for q in cluster_queues]
    earlier = Snapshot(cluster_nodes, cluster_queues, draw(gangs(names, "a", not contested)), NOW)
    first = plan_cycle(earlier, conf)
    placed = {b.task_uid: b.node for g in first.binds for b in g.binds}
    admitted = set(first.enqueued)
    settled = []
    for gang in earlier.gangs:
        tasks = tuple(
            replace(t, status=draw(st.sampled_from(HELD)), node=placed[t.uid]) if t.uid in placed else t
            for t in gang.tasks
        )
        phase = "Running" if any(t.uid in placed for t in gang.tasks) else gang.phase
        phase = "Inqueue" if gang.uid in admitted and phase == "Pending" else phase
        held = sum(1 for t in tasks if t.uid in placed)
        if contested and held and draw(st.integers(0, 2)) == 0:
            # the gang grows a more important member it cannot start without: it may take the
            # place of its own lower-priority tasks (preempt's second phase)
            chief = replace(tasks[0], uid=f"{gang.uid}-chief", name=f"{gang.name}-chief-0", priority=9)
            chief = replace(chief, status="Pending", node=None, task_role="chief")
            tasks, gang = (*tasks, chief), replace(gang, min_member=held + 1, min_task_member={})
        settled.append(replace(gang, tasks=tasks, phase=phase))
    later = draw(gangs(names, "b", not contested))
    if contested:
        later = tuple(replace(g, priority=g.priority + 5, phase="Inqueue") for g in later)
    return Snapshot(cluster_nodes, cluster_queues, (*settled, *later), NOW), conf


def _tasks(snapshot: Snapshot) -> dict[str, tuple[GangInfo, TaskInfo]]:
    return {t.uid: (g, t) for g in snapshot.gangs for t in g.tasks}


def check_invariants(snapshot: Snapshot, plan: CyclePlan) -> None:
    tasks = _tasks(snapshot)
    ready_nodes = {n.name: n for n in snapshot.nodes if n.ready}
    binds = [(g.gang_uid, b) for g in plan.binds for b in g.binds]

    # no pod bound twice, and only pending pods of the gang named, onto Ready nodes
    assert len({b.task_uid for _, b in binds}) == len(binds)
    assert len({g.gang_uid for g in plan.binds}) == len(plan.binds)
    for gang_uid, bind in binds:
        gang, task = tasks[bind.task_uid]
        assert gang.uid == gang_uid
        assert task.status == "Pending"
        assert bind.node in ready_nodes

    # no node's allocatable exceeded
    used: dict[str, Counter[str]] = defaultdict(Counter)
    for _, task in tasks.values():
        if task.status in ("Bound", "Running", "Releasing") and task.node in ready_nodes:
            used[task.node].update(task.request)
    for _, bind in binds:
        used[bind.node].update(tasks[bind.task_uid][1].request)
    for name, amounts in used.items():
        allocatable = ready_nodes[name].allocatable
        for resource, amount in amounts.items():
            assert amount <= allocatable[resource], (name, resource)

    # no queue's capability exceeded (a queue's capability covers its children too)
    queues = {q.name: q for q in snapshot.queues}
    charged: dict[str, Counter[str]] = defaultdict(Counter)

    def charge(queue_name: str, request: Resources) -> None:
        seen = set()
        while queue_name in queues and queue_name not in seen:
            seen.add(queue_name)
            charged[queue_name].update(request)
            queue_name = queues[queue_name].parent or ""

    for gang, task in tasks.values():
        if task.status in HELD:
            charge(gang.queue, task.request)
    for _, bind in binds:
        gang, task = tasks[bind.task_uid]
        charge(gang.queue, task.request)
    for name, amounts in charged.items():
        capability = queues[name].capability
        if capability is not None:
            for resource, amount in amounts.items():
                if resource in capability:
                    assert amount <= capability[resource], (name, resource)

    # every gang with binds is whole: its minimum and each task's minimum are met
    bound_by_gang: dict[str, set[str]] = defaultdict(set)
    for gang_uid, bind in binds:
        bound_by_gang[gang_uid].add(bind.task_uid)
    for gang in snapshot.gangs:
        if gang.uid not in bound_by_gang:
            continue
        ready = [
            t for t in gang.tasks if t.status in (*HELD, "Succeeded") or t.uid in bound_by_gang[gang.uid]
        ]
        best_effort = [
            t
            for t in gang.tasks
            if t.status == "Pending" and t.uid not in bound_by_gang[gang.uid] and set(t.request) <= {"pods"}
        ]
        assert len(ready) + len(best_effort) >= gang.min_member
        if gang.min_task_member and gang.min_member >= sum(gang.min_task_member.values()):
            for role, minimum in gang.min_task_member.items():
                assert sum(1 for t in ready if t.task_role == role) >= minimum

    # evictions: only placed, preemptable pods; victim gangs at minimum or emptied; and only
    # for a preemptor that reaches its minimum with what it was nominated
    evicted = Counter(tasks[e.task_uid][0].uid for e in plan.evictions)
    assert len({e.task_uid for e in plan.evictions}) == len(plan.evictions)
    for eviction in plan.evictions:
        _, task = tasks[eviction.task_uid]
        assert task.status in HELD
        assert task.preemptable or eviction.reason == "gang-release"
    nominated = Counter(n.gang_uid for n in plan.nominations)
    # a gang's pending task may take its own lower-priority tasks' place (preempt's second phase)
    swapped = {
        e.preemptor_gang_uid for e in plan.evictions if e.preemptor_gang_uid == tasks[e.task_uid][0].uid
    }
    for gang_uid, count in evicted.items():
        gang = next(g for g in snapshot.gangs if g.uid == gang_uid)
        if gang_uid in plan.released:
            continue
        held = sum(1 for t in gang.tasks if t.status in HELD)
        if gang_uid in swapped:  # swaps never deepen its shortfall
            assert held - count + nominated[gang_uid] >= min(held, gang.min_member)
        else:
            assert held - count == 0 or held - count >= gang.min_member
    for preemptor in {
        e.preemptor_gang_uid
        for e in plan.evictions
        if e.preemptor_gang_uid and e.preemptor_gang_uid != tasks[e.task_uid][0].uid
    }:
        gang = next(g for g in snapshot.gangs if g.uid == preemptor)
        held = sum(1 for t in gang.tasks if t.status in (*HELD, "Succeeded"))
        assert held + nominated[preemptor] >= gang.min_member


def _reordered(snapshot: Snapshot) -> Snapshot:
    return replace(
        snapshot,
        nodes=tuple(reversed(snapshot.nodes)),
        queues=tuple(reversed(snapshot.queues)),
        gangs=tuple(replace(g, tasks=tuple(reversed(g.tasks))) for g in reversed(snapshot.gangs)),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots())
def test_invariants_hold_for_random_clusters(case: tuple[Snapshot, SchedulerConf]) -> None:
    snapshot, conf = case
    plan = plan_cycle(snapshot, conf)
    check_invariants(snapshot, plan)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots(contested=True))
def test_invariants_hold_when_newcomers_contest_the_cluster(
    case: tuple[Snapshot, SchedulerConf],
) -> None:
    snapshot, conf = case
    plan = plan_cycle(snapshot, conf)
    check_invariants(snapshot, plan)
    assert plan_cycle(_reordered(snapshot), conf) == plan


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots())
def test_same_input_same_plan_whatever_the_input_order(
    case: tuple[Snapshot, SchedulerConf],
) -> None:
    snapshot, conf = case
    plan = plan_cycle(snapshot, conf)
    assert plan_cycle(snapshot, conf) == plan
    assert plan_cycle(_reordered(snapshot), conf) == plan


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.booleans().flatmap(lambda contested: snapshots(contested=contested)))
def test_invariants_hold_on_the_cycle_after_decisions_are_applied(
    case: tuple[Snapshot, SchedulerConf],
) -> None:
    snapshot, conf = case
    plan = plan_cycle(snapshot, conf)
    bound = {b.task_uid: b.node for g in plan.binds for b in g.binds}
    evicted = {e.task_uid for e in plan.evictions}
    nominated = {n.task_uid: n.node for n in plan.nominations}
    gangs = []
    for gang in snapshot.gangs:
        tasks = []
        for t in gang.tasks:
            if t.uid in bound:
                t = replace(t, status="Bound", node=bound[t.uid], nominated_node=None)
            elif t.uid in evicted:
                t = replace(t, status="Releasing")
            else:
                t = replace(t, nominated_node=nominated.get(t.uid))
            tasks.append(t)
        gangs.append(replace(gang, tasks=tuple(tasks)))
    after = replace(snapshot, gangs=tuple(gangs))
    second = plan_cycle(after, conf)
    check_invariants(after, second)
    # evictions already under way are not repeated for the same preemptor (no storm)
    for eviction in second.evictions:
        assert eviction.task_uid not in evicted
