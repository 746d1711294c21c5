"""Pure: settled gangs, which the default actions never touch, summed instead of walked.

A gang is *settled* when it is admitted, ready (enough members bound, running or done), and has
nothing left to place or release: no pending, gated, nominated or releasing task. Enqueue,
allocate and backfill never act on such a gang, and the cycle's plan says nothing of it (no bind,
verdict, nomination, nor "underfilled"). What the cycle needs of it is only its *footprint*: the
room its tasks hold on their nodes, what it charges its queue (allocated, requested, elastic) and
the part of its minResources not held yet (overcommit's inqueue). The shell keeps those footprints
per gang, rebuilds them only for the gangs whose rows changed, and hands the running sums to the
core as `SettledGangs` on the snapshot; `build_context` (build.py) then books the sums instead of
building a view per task of every gang, so a cycle costs in proportion to the gangs with work.

The sums stand in for the gangs only where nothing else reads them: `lean_applies` says when
(the default actions; no preempt, reclaim, task-topology, hierarchy, preemptioncost, reservation
or network topology, which read running gangs; no task with work that reads where other pods
are). Otherwise the cycle walks every gang as before and the sums are ignored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from services.scheduler.core.config import SchedulerConf
from services.scheduler.core.predicates import anti_affinity_terms, has_pod_affinity
from services.scheduler.core.preemption_cost import PLUGIN as PREEMPTION_COST
from services.scheduler.core.reservation import BackfillSettings
from services.scheduler.core.snapshot import (
    BOUND,
    FAILED,
    OCCUPYING_STATUSES,
    PENDING,
    RELEASING,
    RUNNING,
    SUCCEEDED,
    GangInfo,
    SettledGangs,
    TaskInfo,
)
from shared.domain.resources import Resources

_KNOWN = frozenset({PENDING, BOUND, RUNNING, RELEASING, SUCCEEDED, FAILED})
_READY = frozenset({BOUND, RUNNING, SUCCEEDED})  # build.py's READY_STATUSES, as a snapshot holds them
_ALLOCATED = frozenset({BOUND, RUNNING})  # QUEUE_ALLOCATED_STATUSES, as a snapshot holds them
LEAN_ACTIONS = frozenset({"enqueue", "allocate", "backfill"})
_QUEUE_SUMS = ("alloc", "request", "elastic", "inqueue")


@dataclass(frozen=True, slots=True)
class Footprint:
    """What one settled gang contributes to the cycle's sums."""

    queue: str
    occupied: tuple[tuple[str, Resources], ...]  # (node name, request) per task holding a node
    alloc: Resources
    request: Resources
    elastic: Resources  # allocated beyond its minResources
    inqueue: Resources  # its minResources not held yet (Inqueue or Running gangs only)
    names: frozenset[str]  # every resource name its tasks and minResources mention


def _status(task: TaskInfo) -> str:
    return task.status if task.status in _KNOWN else BOUND


def footprint(gang: GangInfo, queues: Collection[str]) -> Footprint | None:
    """The gang's footprint if it is settled (its queue among `queues`), else None."""
    if gang.phase in ("Pending", "") or not gang.tasks or gang.below_min_since is not None:
        return None
    if gang.queue not in queues:
        return None
    ready, role_ready = 0, Counter[str]()
    occupied: list[tuple[str, Resources]] = []
    allocated: list[Resources] = []
    names: set[str] = set(gang.min_resources or ())
    for task in gang.tasks:
        status = _status(task)
        if status in (PENDING, RELEASING) or task.nominated_node or task.scheduling_gated:
            return None
        if task.host_ports or task.device_claims or anti_affinity_terms(task.affinity):
            return None  # what the filters of other pods read: keep it walked
        names.update(task.request)
        if status in _READY:
            ready += 1
            role_ready[task.task_role] += 1
        if status in _ALLOCATED:
            allocated.append(task.request)
        if status in OCCUPYING_STATUSES and task.node:
            occupied.append((task.node, task.request))
    if ready < gang.min_member:
        return None
    minimums = gang.min_task_member
    role_minimums = minimums and gang.min_member >= sum(minimums.values())
    if role_minimums and any(role_ready[role] < minimum for role, minimum in minimums.items()):
        return None
    alloc = Resources.total(allocated)
    floor, elastic, inqueue = gang.min_resources, Resources(), Resources()
    if floor is not None:  # as build.py's _add_elastic and fairness.cluster_usage count them
        elastic = Resources({name: max(0, amount - floor[name]) for name, amount in alloc.items()})
        if gang.phase in ("Inqueue", "Running"):
            inqueue = Resources({name: max(0, amount - alloc[name]) for name, amount in floor.items()})
    return Footprint(gang.queue, tuple(occupied), alloc, alloc, elastic, inqueue, frozenset(names))


def lean_applies(conf: SchedulerConf, walked: Iterable[GangInfo], *, hyper_nodes: bool) -> bool:
    """Whether the cycle may book settled gangs from their sums (see the module docstring)."""
    if not set(conf.actions) <= LEAN_ACTIONS or hyper_nodes:
        return False
    if conf.enabled("task-topology") or conf.enabled("drf", "enableHierarchy"):
        return False
    if conf.plugin(PREEMPTION_COST) is not None or BackfillSettings.of(conf).mode != "none":
        return False
    # A task that looks at the pods around it (affinity, spread, host ports) needs them all.
    return not any(
        task.host_ports or task.spread_constraints or has_pod_affinity(task)
        for gang in walked
        for task in gang.tasks
    )


class SettledBook:
    """The shell's running sums of settled footprints: add or drop a gang's as it changes."""

    def __init__(self) -> None:
        self._footprints: dict[str, Footprint] = {}
        self._occupied: dict[str, dict[str, int]] = {}
        # Each node's sum as a vector, remade only for the nodes a change touched: a cycle that
        # changed a few gangs costs those gangs' nodes, not the cluster's.
        self._vectors: dict[str, Resources] = {}
        self._touched: set[str] = set()
        self._queues: dict[str, dict[str, dict[str, int]]] = {}  # sum name -> queue -> amounts
        self._gangs: Counter[str] = Counter()
        self._names: Counter[str] = Counter()
        self._frozen: SettledGangs | None = SettledGangs()

    def __contains__(self, uid: str) -> bool:
        return uid in self._footprints

    def put(self, uid: str, print_: Footprint | None) -> None:
        """Set (None: clear) the footprint of gang `uid`."""
        old = self._footprints.pop(uid, None)
        if old is not None:
            self._apply(old, -1)
        if print_ is not None:
            self._footprints[uid] = print_
            self._apply(print_, 1)
        if old is not None or print_ is not None:
            self._frozen = None

    def _apply(self, print_: Footprint, sign: int) -> None:
        for node, request in print_.occupied:
            _add(self._occupied, node, request, sign)
            self._touched.add(node)
        for name in _QUEUE_SUMS:
            _add(self._queues.setdefault(name, {}), print_.queue, getattr(print_, name), sign)
        self._gangs[print_.queue] += sign
        self._names.update(dict.fromkeys(print_.names, sign))

    def frozen(self) -> SettledGangs:
        """The sums as plain immutable data (rebuilt only after a change)."""
        if self._frozen is None:
            for node in self._touched:
                held = self._occupied.get(node)
                if held is None:
                    self._vectors.pop(node, None)
                else:
                    self._vectors[node] = Resources(held)
            self._touched.clear()
            sums = {name: _resources(self._queues.get(name, {})) for name in _QUEUE_SUMS}
            self._frozen = SettledGangs(
                uids=frozenset(self._footprints),
                occupied=dict(self._vectors),
                queues=frozenset(q for q, count in self._gangs.items() if count > 0),
                names=frozenset(n for n, count in self._names.items() if count > 0),
                **sums,
            )
        return self._frozen


def _add(sums: dict[str, dict[str, int]], key: str, amounts: Mapping[str, int], sign: int) -> None:
    held = sums.setdefault(key, {})
    for name, amount in amounts.items():
        held[name] = held.get(name, 0) + sign * amount
        if not held[name]:
            del held[name]
    if not held:
        del sums[key]


def _resources(sums: Mapping[str, Mapping[str, int]]) -> Mapping[str, Resources]:
    return {key: Resources(amounts) for key, amounts in sums.items()}


def settled_of(gangs: Iterable[GangInfo], queues: Collection[str]) -> SettledGangs:
    """The sums from scratch (a full build, and the tests' reference)."""
    book = SettledBook()
    for gang in gangs:
        book.put(gang.uid, footprint(gang, queues))
    return book.frozen()
