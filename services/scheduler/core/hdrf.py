"""Hierarchical DRF: the drf plugin's `enableHierarchy`, queue order and reclaim by a share tree.

Built by `build_context` when drf has `enableHierarchy: true`; `ordering.queue_key` reads a
queue's position from it and the reclaim action asks it whether a victim may be taken. Queues
sit in a tree given by their annotations `volcano.sh/hierarchy` ("root/eng/prod") and
`volcano.sh/hierarchy-weights` ("1/2/8"); a queue without them hangs directly under root with
weight 1. Gangs are the leaves. As in Volcano, a leaf is *saturated* when it holds all it asks
for in some resource, or asks for a resource the cluster has no more of; an inner node's
allocation is its children's, each unsaturated child scaled to the smallest dominant share among
them, so that a subtree counts by how evenly it is served rather than by how many gangs it has.
Queues compare top-down along their paths: unsaturated before saturated, then lower
share / weight first; the first level that differs decides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from services.scheduler.core.state import CycleState, GangView, QueueView
from services.scheduler.core.vectors import Sparse
from shared.volcano.keys import HIERARCHY, HIERARCHY_WEIGHTS


def queue_path(queue: QueueView) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """The queue's path from root and the weight of each level (root's is 1)."""
    raw = queue.info.annotations.get(HIERARCHY, "").strip()
    names = tuple(raw.split("/")) if raw else ("root", queue.name)
    given = queue.info.annotations.get(HIERARCHY_WEIGHTS, "").split("/")
    weights = []
    for level in range(len(names)):
        try:
            weight = float(given[level]) if level < len(given) else 1.0
        except ValueError:
            weight = 1.0
        weights.append(weight if weight >= 1 else 1.0)  # Volcano raises weights below 1 to 1
    return names, tuple(weights)


@dataclass(slots=True, eq=False)
class _Node:
    weight: float
    children: dict[str, _Node] = field(default_factory=dict)
    leaves: list[GangView] = field(default_factory=list)
    allocated: list[float] = field(default_factory=list)
    share: float = 0.0
    saturated: bool = False


class HierarchyShares:
    """The hDRF tree of one cycle, recomputed lazily whenever an allocation has changed."""

    def __init__(self, state: CycleState, total: Sequence[int]) -> None:
        self._state = state
        self._dims = range(state.space.size - 1)  # fairness ignores the pod count
        self._total = total
        self._paths = {name: queue_path(queue) for name, queue in state.queues.items()}
        self._requests: dict[str, list[int]] = {}
        for gang in state.gangs:
            request = [0] * state.space.size
            for task in gang.tasks:
                for i, amount in task.request:
                    request[i] += amount
            self._requests[gang.uid] = request
        self._keys: dict[str, tuple[tuple[bool, float], ...]] = {}
        self._seen = -1

    def queue_key(self, queue: QueueView) -> tuple[tuple[bool, float], ...]:
        if self._seen != self._state.changes:
            self._keys = self._compute({})
            self._seen = self._state.changes
        return self._keys.get(queue.name, ())

    def reclaim_allowed(
        self, reclaimer: GangView, request: Sparse, victim: GangView, batch: Sequence[Sparse]
    ) -> bool:
        """drf's Reclaimable: with the task placed and the victims gone, the reclaimer's queue
        would still come before the victim's."""
        if reclaimer.queue is None or victim.queue is None:
            return False
        overrides = {reclaimer.uid: list(reclaimer.alloc)}
        for i, amount in request:
            overrides[reclaimer.uid][i] += amount
        taken = overrides.setdefault(victim.uid, list(victim.alloc))
        for member in batch:
            for i, amount in member:
                taken[i] -= amount
        keys = self._compute(overrides)
        return keys.get(reclaimer.queue.name, ()) < keys.get(victim.queue.name, ())

    # --- the tree -------------------------------------------------------------------------------
    def _compute(self, overrides: Mapping[str, list[int]]) -> dict[str, tuple[tuple[bool, float], ...]]:
        root = _Node(weight=1.0)
        allocated = [0] * self._state.space.size
        for gang in self._state.gangs:
            if gang.queue is None:
                continue
            alloc = overrides.get(gang.uid, gang.alloc)
            for i in self._dims:
                allocated[i] += alloc[i]
            names, weights = self._paths[gang.queue.name]
            node = root
            for name, weight in zip(names[1:], weights[1:], strict=True):
                node = node.children.setdefault(name, _Node(weight=weight))
            node.leaves.append(gang)
        demanding = {i for i in self._dims if allocated[i] < self._total[i]}
        self._settle(root, overrides, demanding)
        keys: dict[str, tuple[tuple[bool, float], ...]] = {}
        for queue_name, (names, _) in self._paths.items():
            level: _Node | None = root
            key = []
            for below in (*names[1:], None):
                # A level no gang reaches yet holds nothing and wants nothing: share 0.
                key.append((level.saturated, level.share / level.weight) if level else (False, 0.0))
                level = level.children.get(below) if level and below is not None else None
            keys[queue_name] = tuple(key)
        return keys

    def _settle(self, node: _Node, overrides: Mapping[str, list[int]], demanding: set[int]) -> None:
        members: list[tuple[list[float], float, bool]] = []  # (allocated, share, saturated)
        for child in node.children.values():
            self._settle(child, overrides, demanding)
            members.append((child.allocated, child.share, child.saturated))
        for gang in node.leaves:
            alloc = [float(a) for a in overrides.get(gang.uid, gang.alloc)]
            request = self._requests[gang.uid]
            members.append((alloc, self._share_of(alloc), self._leaf_saturated(alloc, request, demanding)))
        smallest = min((share for _, share, sat in members if share != 0 and not sat), default=1.0)
        smallest = min(smallest, 1.0)
        node.allocated = [0.0] * self._state.space.size
        for alloc, share, saturated in members:
            if share == 0:
                continue
            scale = 1.0 if saturated else smallest / share
            for i in self._dims:
                node.allocated[i] += alloc[i] * scale
        node.share = self._share_of(node.allocated)
        node.saturated = all(saturated for _, _, saturated in members)

    def _leaf_saturated(self, alloc: Sequence[float], request: Sequence[int], demanding: set[int]) -> bool:
        for i in self._dims:
            if request[i] == 0:
                continue
            if alloc[i] != 0 and alloc[i] >= request[i]:
                return True
            if i not in demanding:
                return True
        return False

    def _share_of(self, alloc: Sequence[float]) -> float:
        share = 0.0
        for i in self._dims:
            if self._total[i] > 0 and alloc[i] > 0:
                share = max(share, alloc[i] / self._total[i])
        return share
