"""The cycle's working state: the snapshot turned into mutable, index-based views with a trial log.

`plan_cycle` builds one `CycleState` from the `Snapshot`; the actions then place, pipeline and
evict tasks through it. Every mutation made while a trial is open is recorded so that `rollback`
restores the state exactly (Volcano's Statement.Discard) and `commit` keeps it (Statement.Commit).
A node's `idle` is allocatable minus everything placed or pipelined on it; `releasing` is what
pending evictions will free, so Volcano's FutureIdle is `idle + releasing`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from services.scheduler.core.devices import DeviceRef, DeviceResult
from services.scheduler.core.devices import allocate as allocate_devices
from services.scheduler.core.node_base import NodeBase
from services.scheduler.core.snapshot import (
    ALLOCATED,
    BOUND,
    FAILED,
    OCCUPYING_STATUSES,
    PENDING,
    PIPELINED,
    RELEASING,
    RUNNING,
    SUCCEEDED,
    GangInfo,
    HostPort,
    NodeInfo,
    QueueInfo,
    QueueUsage,
    TaskInfo,
)
from services.scheduler.core.vectors import ResourceSpace, Sparse, add_into

READY_STATUSES = frozenset({BOUND, RUNNING, ALLOCATED, SUCCEEDED})
QUEUE_ALLOCATED_STATUSES = frozenset({BOUND, RUNNING, ALLOCATED, PIPELINED})
VALID_STATUSES = frozenset({BOUND, RUNNING, ALLOCATED, SUCCEEDED, PIPELINED, PENDING})


@dataclass(slots=True, eq=False)
class QueueView:
    info: QueueInfo
    alloc: list[int]
    capability: list[int]  # UNLIMITED where the queue names no limit
    ancestors: list[QueueView] = field(default_factory=list)  # parent first, root last
    deserved: list[int] | None = None
    real_capability: list[int] | None = None
    guarantee: list[int] = field(default_factory=list)
    request: list[int] = field(default_factory=list)
    inqueue: list[int] = field(default_factory=list)
    elastic: list[int] = field(default_factory=list)
    has_gangs: bool = False

    @property
    def name(self) -> str:
        return self.info.name


@dataclass(slots=True, eq=False)
class TaskView:
    info: TaskInfo
    gang: GangView
    request: Sparse
    best_effort: bool
    order: tuple[int, int, str, str]
    status: str
    node: int = -1
    has_anti_affinity: bool = False  # required pod anti-affinity: constrains later pods too
    schedulable: bool = False  # placed by a trial that was later discarded (Volcano "Schedulable")
    fit_error: str | None = None


@dataclass(slots=True, eq=False)
class GangView:
    info: GangInfo
    queue: QueueView | None
    tasks: list[TaskView] = field(default_factory=list)
    phase: str = "Pending"
    ready: int = 0
    waiting: int = 0
    role_ready: dict[str, int] = field(default_factory=dict)
    role_waiting: dict[str, int] = field(default_factory=dict)
    pending_best_effort: int = 0
    alloc: list[int] = field(default_factory=list)
    enqueue_reason: str | None = None
    enqueue_detail: str = ""
    block_reason: str | None = None  # first structured reason a placement attempt hit
    job_fit_error: str = ""
    released: bool = False
    domain: str = ""  # the HyperNode a network-topology search placed the gang in

    @property
    def uid(self) -> str:
        return self.info.uid

    def role_minimums_apply(self) -> bool:
        # Volcano skips per-task minimums when minAvailable is below their sum.
        return bool(self.info.min_task_member) and self.info.min_member >= sum(
            self.info.min_task_member.values()
        )

    def is_ready(self) -> bool:
        if self.ready + self.pending_best_effort < self.info.min_member:
            return False
        if self.role_minimums_apply():
            for role, minimum in self.info.min_task_member.items():
                if self.role_ready.get(role, 0) < minimum:
                    return False
        return True

    def is_pipelined(self) -> bool:
        if self.ready + self.waiting + self.pending_best_effort < self.info.min_member:
            return False
        if self.role_minimums_apply():
            for role, minimum in self.info.min_task_member.items():
                if self.role_ready.get(role, 0) + self.role_waiting.get(role, 0) < minimum:
                    return False
        return True

    def is_starving(self) -> bool:
        return self.ready + self.waiting < self.info.min_member

    def count(self, role: str, status: str, sign: int) -> None:
        if status in READY_STATUSES:
            self.ready += sign
            self.role_ready[role] = self.role_ready.get(role, 0) + sign
        elif status == PIPELINED:
            self.waiting += sign
            self.role_waiting[role] = self.role_waiting.get(role, 0) + sign


class CycleState:
    """Nodes, queues, gangs and tasks of one cycle, mutated only through the methods below."""

    def __init__(
        self,
        space: ResourceSpace,
        nodes: Sequence[NodeInfo],
        base: NodeBase | None = None,
        idle: Sequence[Sequence[int]] | None = None,
    ) -> None:
        """The Ready ones of `nodes` in name order; `base`: their vectors kept from an earlier
        cycle (made of `nodes` in `space`), made here otherwise; `idle`: where each node's idle
        starts (copied; its allocatable unless given, NodeBase.idle_after)."""
        base = base if base is not None else NodeBase.of(space, nodes)
        self.base = base
        self.space = space
        self.nodes = base.nodes
        self.node_index = base.index
        self.allocatable = base.allocatable
        self.total = base.total
        self.idle = [list(vector) for vector in (self.allocatable if idle is None else idle)]
        self.releasing = [[0] * space.size for _ in nodes]
        # Per node index, made when a node is first asked for: a cycle touches few nodes, and
        # making an empty container for every node of a large cluster was a cycle's cost.
        self.tasks_on_node: defaultdict[int, dict[str, TaskView]] = defaultdict(dict)
        self.other_labels: defaultdict[int, list[tuple[str, dict[str, str]]]] = defaultdict(list)
        # What other schedulers' pods on each node hold that our filters read: host ports, and
        # the required anti-affinity terms they impose on pods that come after them.
        self.other_ports: defaultdict[int, list[HostPort]] = defaultdict(list)
        self.other_anti: defaultdict[int, list[tuple[str, tuple[Mapping[str, Any], ...]]]] = defaultdict(list)
        self.version = [0] * len(nodes)
        self.revived: list[int] = []  # nodes whose idle grew back (rollback): shape heaps re-add them
        self.queues: dict[str, QueueView] = {}
        self.gangs: list[GangView] = []
        # overcommit's minResources not held yet of the settled gangs, which have no view here
        # (core/settled.py); fairness.cluster_usage adds the walked gangs'.
        self.settled_inqueue = [0] * space.size
        self.commits = 0
        self.changes = 0  # bumped by every change of an allocation: lets derived orders go stale
        self.hierarchy: QueueHierarchy | None = None  # drf with enableHierarchy only
        # fairshare only (core/fairshare.py): the usage advanced to now and each queue's fair-tree key.
        self.queue_usage: QueueUsage | None = None
        self.fair_keys: dict[str, tuple[float, ...]] = {}
        self.anti_affinity_pods = 0  # placed pods whose anti-affinity later pods must respect
        self.releasing_tasks = 0  # pods being evicted: their room can be pipelined onto
        # DRA devices (core/devices.py): those taken, those whose holders are being evicted, and
        # what each task placed in this cycle was given.
        self.devices_taken: set[DeviceRef] = set()
        self.devices_releasing: set[DeviceRef] = set()
        self.device_results: dict[str, tuple[DeviceResult, ...]] = {}
        # Told (node, request, +1|-1) whenever a placement in this cycle is made or undone: the
        # HyperNode usage (actions/domain_search.py) keeps its per-domain sums current this way.
        self.listeners: list[Callable[[int, Sparse, int], None]] = []
        self._undo: list[Callable[[], None]] | None = None

    # --- trials -----------------------------------------------------------------------------
    def begin(self) -> None:
        assert self._undo is None, "trials do not nest"
        self._undo = []

    def commit(self) -> None:
        self._undo = None
        self.commits += 1

    def rollback(self) -> None:
        undo, self._undo = self._undo or [], None
        for step in reversed(undo):
            step()

    def _record(self, step: Callable[[], None]) -> None:
        if self._undo is not None:
            self._undo.append(step)

    # --- mutations --------------------------------------------------------------------------
    def _charge_queue(self, task: TaskView, sign: int) -> None:
        queue = task.gang.queue
        if queue is None:
            return
        self.changes += 1
        add_into(queue.alloc, task.request, sign)
        for ancestor in queue.ancestors:
            add_into(ancestor.alloc, task.request, sign)
        add_into(task.gang.alloc, task.request, sign)

    def occupy(self, task: TaskView, node: int) -> None:
        """Book a task already on a node in the snapshot (outside any trial)."""
        add_into(self.idle[node], task.request, -1)
        if task.status == RELEASING:
            add_into(self.releasing[node], task.request)
            self.releasing_tasks += 1
        self.tasks_on_node[node][task.info.uid] = task
        self.anti_affinity_pods += task.has_anti_affinity
        if task.status == RELEASING:
            self.devices_releasing.update(d for claim in task.info.device_claims for d in claim.held)

    def devices_for(
        self, task: TaskView, node: int, *, future: bool = False
    ) -> tuple[DeviceResult, ...] | None:
        """Devices for the task's claims on `node` (with `future`, counting those being released
        as free), () when it has none, None when they do not fit."""
        if not task.info.device_claims:
            return ()
        taken = self.devices_taken - self.devices_releasing if future else self.devices_taken
        return allocate_devices(task.info.device_claims, self.nodes[node].name, taken)

    def devices_ready(self, task: TaskView) -> bool:
        """A pipelined task's claims can be allocated on its node now (not only once victims go)."""
        if not task.info.device_claims:
            return True
        own = {r.ref for r in self.device_results.get(task.info.uid, ())}
        name = self.nodes[task.node].name
        return allocate_devices(task.info.device_claims, name, self.devices_taken - own) is not None

    def _book_devices(self, task: TaskView, results: tuple[DeviceResult, ...] | None) -> None:
        uid = task.info.uid
        before = self.device_results.pop(uid, ())
        self.devices_taken.difference_update(r.ref for r in before)
        if results:
            self.device_results[uid] = results
            self.devices_taken.update(r.ref for r in results)

        def undo() -> None:
            self.devices_taken.difference_update(r.ref for r in results or ())
            self.device_results.pop(uid, None)
            if before:
                self.device_results[uid] = before
                self.devices_taken.update(r.ref for r in before)

        self._record(undo)

    def assign(self, task: TaskView, node: int, status: str) -> None:
        """Place a pending task on `node` as ALLOCATED (to bind) or PIPELINED (to wait there)."""
        if task.info.device_claims:
            self._book_devices(task, self.devices_for(task, node, future=status == PIPELINED))
        previous = task.status
        add_into(self.idle[node], task.request, -1)
        self.version[node] += 1
        task.status, task.node = status, node
        self.tasks_on_node[node][task.info.uid] = task
        self.anti_affinity_pods += task.has_anti_affinity
        task.gang.count(task.info.task_role, status, 1)
        if task.best_effort and previous == PENDING:
            task.gang.pending_best_effort -= 1
        self._charge_queue(task, 1)
        for listener in self.listeners:
            listener(node, task.request, 1)

        def undo() -> None:
            for listener in self.listeners:
                listener(node, task.request, -1)
            add_into(self.idle[node], task.request)
            self.version[node] += 1
            self.revived.append(node)
            task.gang.count(task.info.task_role, status, -1)
            if task.best_effort and previous == PENDING:
                task.gang.pending_best_effort += 1
            self._charge_queue(task, -1)
            del self.tasks_on_node[node][task.info.uid]
            self.anti_affinity_pods -= task.has_anti_affinity
            task.status, task.node = previous, -1
            task.schedulable = True

        self._record(undo)

    def promote(self, task: TaskView) -> None:
        """A pipelined task whose node now has the room turns ALLOCATED (it can bind)."""
        if task.info.device_claims:
            self._book_devices(task, ())  # what it was promised while pipelined is given back
            self._book_devices(task, self.devices_for(task, task.node))
        task.gang.count(task.info.task_role, PIPELINED, -1)
        task.gang.count(task.info.task_role, ALLOCATED, 1)
        task.status = ALLOCATED

        def undo() -> None:
            task.gang.count(task.info.task_role, ALLOCATED, -1)
            task.gang.count(task.info.task_role, PIPELINED, 1)
            task.status = PIPELINED

        self._record(undo)

    def evict(self, task: TaskView) -> None:
        """Mark a placed task for eviction: its room becomes `releasing`, its queue is credited."""
        previous, node = task.status, task.node
        task.status = RELEASING
        held = {d for claim in task.info.device_claims for d in claim.held} | {
            r.ref for r in self.device_results.get(task.info.uid, ())
        }
        new_releasing = held - self.devices_releasing
        self.devices_releasing |= new_releasing
        add_into(self.releasing[node], task.request)
        self.releasing_tasks += 1
        task.gang.count(task.info.task_role, previous, -1)
        self._charge_queue(task, -1)

        def undo() -> None:
            task.status = previous
            self.devices_releasing -= new_releasing
            add_into(self.releasing[node], task.request, -1)
            self.releasing_tasks -= 1
            task.gang.count(task.info.task_role, previous, 1)
            self._charge_queue(task, 1)

        self._record(undo)

    def future_idle(self, node: int) -> list[int]:
        return [a + b for a, b in zip(self.idle[node], self.releasing[node], strict=True)]


def initial_count(gang: GangView, task: TaskView) -> None:
    """Count a snapshot task into its gang (outside any trial)."""
    gang.count(task.info.task_role, task.status, 1)
    if task.status == PENDING and task.best_effort:
        gang.pending_best_effort += 1


def holds_node(status: str) -> bool:
    return status in OCCUPYING_STATUSES


def valid_task_count(gang: GangView) -> int:
    return sum(1 for t in gang.tasks if t.status in VALID_STATUSES)


def finished(status: str) -> bool:
    return status in (SUCCEEDED, FAILED)


class QueueHierarchy(Protocol):
    """What the cycle asks of hierarchical drf (`hdrf.HierarchyShares`, set by `build`). Declared
    here, not imported from `hdrf`, because `hdrf` reads this module's views: no import cycle."""

    def queue_key(self, queue: QueueView) -> tuple[tuple[bool, float], ...]: ...

    def reclaim_allowed(
        self, reclaimer: GangView, request: Sparse, victim: GangView, batch: Sequence[Sparse]
    ) -> bool: ...
