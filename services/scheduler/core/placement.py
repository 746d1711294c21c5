"""Choosing a node for one task: static filters cached per task spec, then a lazy best-node heap.

The actions call `Placer.find` for every task they place. Tasks with the same spec and request
(the members of a gang, usually) share one "shape": its candidate nodes (those passing the
static filters) are computed once per cycle and kept in a heap ordered by score. A node's entry
goes stale when the node changes and is rescored only when it reaches the top; a node that no
longer fits is dropped and comes back only if a rollback frees it. So a placement costs a few
heap operations instead of a scan of every node. Tasks with pod (anti-)affinity, and pipelining
onto capacity that pending evictions will free, take the slower scanning path.
"""

from __future__ import annotations

import heapq
import json
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from services.scheduler.core.devices import CANNOT_ALLOCATE, DeviceRequest, never_satisfiable
from services.scheduler.core.node_filters import PodFilters, placed_pods, pod_filters, wants_pod_filters
from services.scheduler.core.predicates import (
    POD_NUMBER_EXCEEDED,
    PodAffinityCheck,
    PredicateOptions,
    has_pod_affinity,
    static_failure,
)
from services.scheduler.core.scoring import Scorer, ScoreWeights, make_scorer, static_bonus
from services.scheduler.core.snapshot import TaskInfo
from services.scheduler.core.state import CycleState, TaskView
from services.scheduler.core.topology import TopologyScores
from services.scheduler.core.vectors import first_short, fits, fits_with

# How many kinds of task the node base keeps static fits for (beyond, it starts over).
KEPT_STATIC_FITS = 256


@dataclass(slots=True)
class StaticFit:
    candidates: list[int]
    failures: dict[int, str]
    bonus: dict[int, float]


@dataclass(slots=True, eq=False)
class Shape:
    static: StaticFit
    scorer: Scorer | None
    member: frozenset[int]
    heap: list[tuple[float, int, int]] = field(default_factory=list)
    pushed: dict[int, int] = field(default_factory=dict)  # node -> version of its live entry
    revive_pos: int = 0


def static_key(task: TaskInfo) -> Hashable:
    if (
        not task.node_selector
        and not task.affinity
        and not task.tolerations
        and not task.volume_needs
        and not task.device_claims
    ):
        return None
    # Pods asking the same of devices share a key, whatever their claims are called; requests with
    # the same selectors share one candidates map (the shell builds it once), so its id stands for it.
    devices = [
        (
            c.problem,
            c.waiting,
            c.allocated_node,
            [(r.device_class, r.count, r.all_devices, id(r.candidates)) for r in c.requests],
        )
        for c in task.device_claims
    ]
    return json.dumps(
        [task.node_selector, task.affinity, task.tolerations, task.volume_needs, devices],
        sort_keys=True,
        default=repr,
    )


def _request_key(request: DeviceRequest) -> tuple[str, int, bool, int]:
    return (request.device_class, request.count, request.all_devices, id(request.candidates))


class Placer:
    """Finds nodes for tasks over a `CycleState`; one per cycle."""

    def __init__(
        self,
        state: CycleState,
        weights: ScoreWeights,
        options: PredicateOptions,
        topology: TopologyScores | None = None,
    ) -> None:
        self._state = state
        self._weights = weights
        self._options = options
        self._topology = topology
        self._static: dict[Hashable, StaticFit] = {}
        self._shapes: dict[Hashable, Shape] = {}
        self._fit_errors: dict[tuple[Hashable, int], str] = {}
        self._task_keys: dict[str, Hashable] = {}
        self._never: dict[Hashable, str | None] = {}
        self._node_names: set[str] | None = None
        self._candidate_sets: dict[Hashable, frozenset[int]] = {}
        # Set by the HyperNode domain search (actions/domain_search.py) for one trial: the nodes
        # a task may use, or None for all. Restricted tasks take the scanning path.
        self.restrict: Callable[[TaskView], frozenset[int] | None] | None = None
        # The network-topology-aware plugin's node scores for pods without a constraint: for a
        # task, a function of the node (made once per scan), or None.
        self.node_bonus: Callable[[TaskView], Callable[[int], float] | None] | None = None
        self.bonus_applies: Callable[[TaskView], bool] = lambda _task: False
        # Nodes the current search must leave alone: reservation backfill sets them for a retry
        # of a gang that would otherwise delay a reservation (core/reservation.py).
        self.avoid: frozenset[int] = frozenset()

    # --- static filters ---------------------------------------------------------------------
    def _key(self, task: TaskView) -> Hashable:
        key = self._task_keys.get(task.info.uid)
        if key is None and task.info.uid not in self._task_keys:
            key = static_key(task.info)
            self._task_keys[task.info.uid] = key
        return key

    def static_fit(self, task: TaskView) -> StaticFit:
        key = self._key(task)
        fit = self._static.get(key)
        if fit is None:
            fit = self._static[key] = self._kept_static_fit(task, key)
        return fit

    def _kept_static_fit(self, task: TaskView, key: Hashable) -> StaticFit:
        """From the node base when an earlier cycle on the same nodes worked it out. Not for
        tasks with device claims: their key names candidate maps by id, which only one cycle
        keeps alive."""
        if task.info.device_claims:
            return self._new_static_fit(task)
        kept = self._state.base.static_fits
        kept_key = (key, self._options, self._weights.node_affinity, self._weights.taint_toleration)
        fit = kept.get(kept_key)
        if fit is None:
            if len(kept) >= KEPT_STATIC_FITS:
                kept.clear()
            fit = kept[kept_key] = self._new_static_fit(task)
        return fit

    def _new_static_fit(self, task: TaskView) -> StaticFit:
        nodes = self._state.nodes
        candidates: list[int] = []
        failures: dict[int, str] = {}
        for index, node in enumerate(nodes):
            reason = static_failure(task.info, node, self._options)
            if reason is None:
                candidates.append(index)
            else:
                failures[index] = reason
        return StaticFit(candidates, failures, static_bonus(self._weights, task.info, nodes, candidates))

    def candidate_set(self, task: TaskView) -> frozenset[int]:
        key = self._key(task)
        found = self._candidate_sets.get(key)
        if found is None:
            found = self._candidate_sets[key] = frozenset(self.static_fit(task).candidates)
        return found

    # --- finding a node ---------------------------------------------------------------------
    def find(self, task: TaskView, *, pipeline: bool = True) -> tuple[int, bool] | None:
        """Best node for `task` and whether it must be pipelined (wait for releasing room)."""
        # Pods with required (anti-)affinity, or any pod once an anti-affine pod is placed, and
        # tasks whose gang has a task topology depend on where other pods are: no cached order
        # can stand for that.
        needs_scan = (
            self._options.enabled
            and self._options.pod_affinity
            and (has_pod_affinity(task.info) or self._state.anti_affinity_pods > 0)
        ) or (self._topology is not None and self._topology.applies(task))
        needs_scan = needs_scan or wants_pod_filters(task.info, self._options) or bool(self.avoid)
        within = self.restrict(task) if self.restrict is not None else None
        bonus = self.node_bonus is not None and self.bonus_applies(task)
        needs_scan = needs_scan or within is not None or bonus
        node = self._scan(task, future=False, within=within) if needs_scan else self._from_heap(task)
        if node is not None:
            return node, False
        if pipeline and self._any_releasing():
            node = self._scan(task, future=True, within=within)
            if node is not None:
                return node, True
        return None

    def _any_releasing(self) -> bool:
        return self._state.releasing_tasks > 0

    def _shape(self, task: TaskView) -> Shape:
        key = (self._key(task), task.request)
        shape = self._shapes.get(key)
        if shape is None:
            static = self.static_fit(task)
            scorer = make_scorer(self._weights, self._state.space, task.request)
            shape = Shape(static, scorer, frozenset(static.candidates))
            shape.revive_pos = len(self._state.revived)
            self._fill(shape, task)
            self._shapes[key] = shape
        return shape

    def _fill(self, shape: Shape, task: TaskView) -> None:
        """A new shape's heap: every candidate node the task fits, scored, heapified at once
        (what `_push` does per node, without a heap push each: this runs over every node)."""
        state, request, scorer, bonus = self._state, task.request, shape.scorer, shape.static.bonus
        version, idle, allocatable, pushed = state.version, state.idle, state.allocatable, shape.pushed
        entries = []
        for node in shape.static.candidates:
            free = idle[node]
            if not fits(request, free):
                continue
            pushed[node] = version[node]
            score = bonus.get(node, 0.0) if bonus else 0.0
            if scorer is not None:
                score += scorer(free, allocatable[node])
            entries.append((-score, node, version[node]))
        heapq.heapify(entries)
        shape.heap = entries

    def _push(self, shape: Shape, task: TaskView, node: int) -> None:
        state = self._state
        version = state.version[node]
        idle = state.idle[node]
        if shape.pushed.get(node) == version or not fits(task.request, idle):
            return
        shape.pushed[node] = version
        score = shape.static.bonus.get(node, 0.0) if shape.static.bonus else 0.0
        if shape.scorer is not None:
            score += shape.scorer(idle, state.allocatable[node])
        heapq.heappush(shape.heap, (-score, node, version))

    def _from_heap(self, task: TaskView) -> int | None:
        shape = self._shape(task)
        state = self._state
        if shape.revive_pos < len(state.revived):
            for node in sorted(set(state.revived[shape.revive_pos :])):
                if node in shape.member:
                    self._push(shape, task, node)
            shape.revive_pos = len(state.revived)
        heap, version, idle, request = shape.heap, state.version, state.idle, task.request
        while heap:
            _, node, seen = heap[0]
            if seen != version[node]:
                heapq.heappop(heap)
                self._push(shape, task, node)
                continue
            # DRA claims also depend on which devices earlier placements took on the node; those
            # change only with placements on that node, which make its entry stale anyway.
            if fits(request, idle[node]) and (
                not task.info.device_claims or state.devices_for(task, node) is not None
            ):
                return node
            heapq.heappop(heap)
            shape.pushed.pop(node, None)
        return None

    def _scan(self, task: TaskView, *, future: bool, within: frozenset[int] | None = None) -> int | None:
        state = self._state
        static = self.static_fit(task)
        candidates = static.candidates
        if within is not None:
            allowed = self.candidate_set(task)
            candidates = sorted(node for node in within if node in allowed)
        extra = self.node_bonus(task) if self.node_bonus is not None and self.bonus_applies(task) else None
        affinity = self._affinity_check(task)
        ports = pod_filters(self._state, task.info, self._options, future=future)
        scorer = make_scorer(self._weights, state.space, task.request)
        topology = self._topology.bonus(task) if self._topology and self._topology.applies(task) else {}
        devices = bool(task.info.device_claims)
        ranked: list[tuple[float, int]] = []  # with devices: check them best node first, lazily
        best: tuple[float, int] | None = None
        for node in candidates:
            if node in self.avoid:
                continue
            if future:
                if not fits_with(task.request, state.idle[node], state.releasing[node]):
                    continue
            elif not fits(task.request, state.idle[node]):
                continue
            if affinity is not None and affinity.failure(node) is not None:
                continue
            if ports is not None and ports.failure(node) is not None:
                continue
            score = static.bonus.get(node, 0.0) + topology.get(node, 0.0)
            if extra is not None:
                score += extra(node)
            if scorer is not None:
                score += scorer(state.idle[node], state.allocatable[node])
            if devices:
                ranked.append((-score, node))
            elif best is None or score > best[0]:
                best = (score, node)
        if devices:  # the same choice as above, but the allocator runs only until a node fits
            ranked.sort()
            return next((n for _, n in ranked if state.devices_for(task, n, future=future) is not None), None)
        return None if best is None else best[1]

    def _affinity_check(self, task: TaskView) -> PodAffinityCheck | None:
        if not (self._options.enabled and self._options.pod_affinity):
            return None
        state = self._state
        if not has_pod_affinity(task.info) and state.anti_affinity_pods == 0:
            return None
        return PodAffinityCheck(task.info, state.nodes, placed_pods(state))

    def never_satisfiable(self, task: TaskView) -> str | None:
        """Why no node could ever hold the task's DRA claims (devices.never_satisfiable), once per
        task spec and cycle."""
        key = self._key(task)
        if key not in self._never:
            if self._node_names is None:
                self._node_names = {node.name for node in self._state.nodes}
            self._never[key] = never_satisfiable(task.info.device_claims, self._node_names)
        return self._never[key]

    # --- explaining a failure ---------------------------------------------------------------
    def fit_error(self, task: TaskView) -> str:
        """Volcano's "0/N nodes are unavailable: <count> <reason>, ...." for an unplaceable task."""
        # Tasks of one shape may differ in what the pod filters read: those take part in the key.
        pod_fields = (task.info.host_ports, task.info.spread_constraints)
        cache_key = ((self._key(task), task.request, repr(pod_fields)), self._state.commits)
        cached = self._fit_errors.get(cache_key)
        if cached is not None:
            return cached
        state = self._state
        static = self.static_fit(task)
        affinity = self._affinity_check(task)
        ports = pod_filters(self._state, task.info, self._options)
        dynamic = affinity is not None or ports is not None
        reasons: Counter[str] = Counter(static.failures.values())
        names = state.space.names
        for node in static.candidates:
            short = first_short(task.request, state.idle[node])
            if short is not None:
                name = names[short]
                reasons[POD_NUMBER_EXCEEDED if name == "pods" else f"Insufficient {name}"] += 1
            elif dynamic and (failure := self._dynamic_failure(node, affinity, ports)) is not None:
                reasons[failure] += 1
            elif task.info.device_claims and state.devices_for(task, node) is None:
                reasons[CANNOT_ALLOCATE] += 1
        total = len(state.nodes)
        message = f"0/{total} nodes are unavailable"
        if reasons:
            message += ": " + ", ".join(sorted(f"{n} {r}" for r, n in reasons.items())) + "."
        self._fit_errors[cache_key] = message
        return message

    @staticmethod
    def _dynamic_failure(
        node: int, affinity: PodAffinityCheck | None, ports: PodFilters | None
    ) -> str | None:
        failure = affinity.failure(node) if affinity is not None else None
        if failure is None and ports is not None:
            failure = ports.failure(node)
        return failure

    def first_reason(self, task: TaskView) -> str | None:
        """The most common per-node reason in the task's fit error (for the structured reason)."""
        message = self.fit_error(task)
        if ": " not in message:
            return None
        parts = [p.rstrip(".") for p in message.split(": ", 1)[1].split(", ")]
        counted = [(int(p.split(" ", 1)[0]), p.split(" ", 1)[1]) for p in parts]
        return min(counted, key=lambda item: (-item[0], item[1]))[1]
