"""reliability.md §6.4 T20: the scheduling core driven through arbitrary histories (hypothesis's
stateful testing), against a model of the cluster it schedules.

Rules submit and cancel gangs, add and delete nodes, run and finish pods, run a cycle and carry
its plan out, lose a plan (the scheduler crashed before its commit), deliver the last plan again
(a redelivered decision: binds of pods no longer pending are refused, as the API server refuses
them), and let evicted pods go and come back pending. After every step the cluster holds: no pod
on two nodes, no node over its allocatable, no queue over its capability, no submitted gang lost;
every plan passes the one-cycle invariants of test_properties.py. And a brute-force reference
agrees on feasibility: when a lone gang in an uncapped queue could start on the free capacity,
the core starts it within two cycles (enqueue, then allocate).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from services.scheduler.core import (
    DEFAULT_CONF,
    CyclePlan,
    GangInfo,
    NodeInfo,
    QueueInfo,
    SchedulerConf,
    Snapshot,
    TaskInfo,
    plan_cycle,
)
from shared.domain.resources import Resources
from tests.unit.scheduler.builders import FULL_CONF, NOW
from tests.unit.scheduler.test_properties import check_invariants

pytestmark = pytest.mark.unit

HOLDING = ("Bound", "Running", "Releasing")
QUEUES = (
    QueueInfo(name="default"),
    QueueInfo(name="capped", capability=Resources({"cpu": 4000})),
)
MAX_NODES = 6


def request(cpu: int) -> Resources:
    return Resources({"cpu": cpu, "memory": 2**30 * 1000, "pods": 1000})


class ClusterModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.conf: SchedulerConf = DEFAULT_CONF
        self.nodes: dict[str, NodeInfo] = {}
        self.gangs: dict[str, GangInfo] = {}
        self.cancelled: set[str] = set()
        self.submitted: set[str] = set()
        self.last_plan: CyclePlan | None = None
        self.serial = 0
        self.clock = 0

    # --- the cluster changing ---

    @initialize(
        conf=st.sampled_from([DEFAULT_CONF, FULL_CONF]),
        cpus=st.lists(st.sampled_from([2000, 4000, 8000]), min_size=1, max_size=4),
    )
    def start(self, conf: SchedulerConf, cpus: list[int]) -> None:
        self.conf = conf
        for cpu in cpus:
            self.add_node(cpu)

    @precondition(lambda self: len(self.nodes) < MAX_NODES)
    @rule(cpu=st.sampled_from([2000, 4000, 8000]))
    def add_node(self, cpu: int) -> None:
        self.serial += 1
        name = f"n{self.serial}"
        allocatable = Resources({"cpu": cpu, "memory": 16 * 2**30 * 1000, "pods": 110_000})
        self.nodes[name] = NodeInfo(
            name=name, allocatable=allocatable, labels={"kubernetes.io/hostname": name}
        )

    @precondition(lambda self: len(self.nodes) > 1)
    @rule(data=st.data())
    def delete_node(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.nodes)))
        del self.nodes[name]
        # its pods die with it, as the node lifecycle controller would have them
        self._update_tasks(lambda t: replace(t, status="Failed") if t.node == name else t)

    @rule(
        size=st.integers(1, 5),
        cpu=st.sampled_from([500, 1000, 2000, 3000]),
        queue=st.sampled_from(["default", "capped"]),
        data=st.data(),
    )
    def submit_gang(self, size: int, cpu: int, queue: str, data: st.DataObject) -> None:
        self.serial += 1
        self.clock += 1
        uid = f"g{self.serial}"
        tasks = tuple(
            TaskInfo(
                uid=f"{uid}-{i}",
                namespace="default",
                name=f"{uid}-worker-{i}",
                request=request(cpu),
                task_role="worker",
            )
            for i in range(size)
        )
        self.gangs[uid] = GangInfo(
            uid=uid,
            namespace="default",
            name=f"job-{uid}",
            queue=queue,
            min_member=data.draw(st.integers(1, size)),
            created=NOW + timedelta(seconds=self.clock),
            tasks=tasks,
            priority=data.draw(st.integers(0, 2)),
        )
        self.submitted.add(uid)

    @precondition(lambda self: bool(self.gangs))
    @rule(data=st.data())
    def cancel_job(self, data: st.DataObject) -> None:
        uid = data.draw(st.sampled_from(sorted(self.gangs)))
        del self.gangs[uid]
        self.cancelled.add(uid)

    @precondition(
        lambda self: any(t.status in ("Bound", "Running") for g in self.gangs.values() for t in g.tasks)
    )
    @rule(data=st.data(), finish=st.booleans())
    def pod_progresses(self, data: st.DataObject, finish: bool) -> None:
        placed = sorted(
            t.uid for g in self.gangs.values() for t in g.tasks if t.status in ("Bound", "Running")
        )
        uid = data.draw(st.sampled_from(placed))
        self._update_tasks(
            lambda t: replace(t, status="Succeeded" if finish else "Running") if t.uid == uid else t
        )

    @rule()
    def evicted_pods_go_and_come_back_pending(self) -> None:
        # The job controller makes a new pod (a new uid) for each evicted one.
        self._update_tasks(
            lambda t: (
                replace(t, uid=f"{t.uid}r", status="Pending", node=None, nominated_node=None)
                if t.status == "Releasing"
                else t
            )
        )

    # --- the scheduler ---

    @rule()
    def cycle(self) -> None:
        plan = self._plan()
        self._apply(plan)
        self.last_plan = plan

    @rule()
    def cycle_lost_before_its_commit(self) -> None:
        self._plan()  # decided, then the process died: nothing of it reaches the cluster

    @precondition(lambda self: self.last_plan is not None)
    @rule()
    def last_plan_delivered_again(self) -> None:
        assert self.last_plan is not None
        self._apply(self.last_plan)

    @rule()
    def lone_gang_that_fits_starts(self) -> None:
        """Differential: a brute-force count of where the gang's pods could go, against the core."""
        waiting = [g for g in self.gangs.values() if any(t.status == "Pending" for t in g.tasks)]
        if len(waiting) != 1 or waiting[0].queue != "default" or self._any("Releasing"):
            return
        gang = waiting[0]
        held = sum(1 for t in gang.tasks if t.status in ("Bound", "Running", "Succeeded"))
        pending = [t for t in gang.tasks if t.status == "Pending"]
        need = gang.min_member - held
        if need <= 0 or len(pending) < need:
            return
        fits = self._room_for(pending[0].request) >= need
        for _ in range(2):
            plan = self._plan()
            self._apply(plan)
        bound = any(t.status == "Bound" for t in self.gangs[gang.uid].tasks)
        assert bound == fits, f"gang {gang.uid}: reference says fits={fits}, the core bound={bound}"

    # --- the invariants, after every step ---

    @invariant()
    def no_node_over_its_allocatable(self) -> None:
        used: dict[str, Counter[str]] = defaultdict(Counter)
        for gang in self.gangs.values():
            for task in gang.tasks:
                if task.status in HOLDING:
                    assert task.node in self.nodes, f"{task.name} holds a deleted node"
                    used[task.node].update(task.request)
        for name, amounts in used.items():
            for resource, amount in amounts.items():
                assert amount <= self.nodes[name].allocatable[resource], (name, resource)

    @invariant()
    def no_queue_over_its_capability(self) -> None:
        capped = Counter[str]()
        for gang in self.gangs.values():
            if gang.queue == "capped":
                for task in gang.tasks:
                    if task.status in ("Bound", "Running"):
                        capped.update(task.request)
        assert capped["cpu"] <= 4000

    @invariant()
    def no_job_lost_or_duplicated(self) -> None:
        assert set(self.gangs) == self.submitted - self.cancelled
        uids = [t.uid for g in self.gangs.values() for t in g.tasks]
        assert len(uids) == len(set(uids))

    # --- helpers ---

    def _snapshot(self) -> Snapshot:
        return Snapshot(
            nodes=tuple(self.nodes[name] for name in sorted(self.nodes)),
            queues=QUEUES,
            gangs=tuple(self.gangs[uid] for uid in sorted(self.gangs)),
            now=NOW + timedelta(seconds=self.clock),
        )

    def _plan(self) -> CyclePlan:
        self.clock += 1
        snapshot = self._snapshot()
        plan = plan_cycle(snapshot, self.conf)
        check_invariants(snapshot, plan)
        return plan

    def _apply(self, plan: CyclePlan) -> None:
        """What the controller and the API server make of a plan: a bind only of a pod still
        pending onto a node that still exists, an eviction only of a pod still on its node."""
        binds = {b.task_uid: b.node for g in plan.binds for b in g.binds}
        evictions = {e.task_uid: e.node for e in plan.evictions}
        enqueued = set(plan.enqueued)

        def carry_out(task: TaskInfo) -> TaskInfo:
            node = binds.get(task.uid)
            if node is not None and task.status == "Pending" and node in self.nodes:
                return replace(task, status="Bound", node=node, nominated_node=None)
            if evictions.get(task.uid) == task.node and task.status in ("Bound", "Running"):
                return replace(task, status="Releasing")
            return task

        self._update_tasks(carry_out)
        for uid in enqueued & set(self.gangs):
            if self.gangs[uid].phase == "Pending":
                self.gangs[uid] = replace(self.gangs[uid], phase="Inqueue")
        # A plan carried out for gangs that are gone (cancelled) binds nothing: their pods are gone.

    def _update_tasks(self, change: object) -> None:
        assert callable(change)
        for uid, gang in self.gangs.items():
            self.gangs[uid] = replace(gang, tasks=tuple(change(t) for t in gang.tasks))

    def _any(self, status: str) -> bool:
        return any(t.status == status for g in self.gangs.values() for t in g.tasks)

    def _room_for(self, each: Resources) -> int:
        """How many pods requesting `each` fit on the free capacity, node by node (the reference)."""
        used: dict[str, Counter[str]] = defaultdict(Counter)
        for gang in self.gangs.values():
            for task in gang.tasks:
                if task.status in HOLDING and task.node:
                    used[task.node].update(task.request)
        room = 0
        for name, node in self.nodes.items():
            room += min(
                (node.allocatable[r] - used[name][r]) // amount for r, amount in each.items() if amount
            )
        return room


ClusterModel.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_the_core_keeps_the_cluster_sound_through_any_history = ClusterModel.TestCase
