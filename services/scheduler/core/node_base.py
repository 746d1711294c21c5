"""Pure: what every cycle's per-node state starts from, kept from one cycle to the next.

`build_context` (build.py) makes the cycle's `CycleState` over a `NodeBase`: the Ready nodes in
name order, their allocatable as dense vectors and its column sums, which kinds of task pass the
static filters on which nodes (placement.py), and the nodes' idle less what the settled gangs hold
(core/settled.py). None of it depends on a cycle's placements, so a plan hands its base on
(`CyclePlan.node_base`) and the next cycle reuses it while the snapshot's nodes are the same
object (snapshot_cache.py keeps the tuple while no node row changed) and the resource names the
same; the settled gangs' holdings are taken off again only on the nodes where they changed. A
cycle on a kept base plans exactly as on a new one (tests/unit/scheduler/test_node_base.py).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from services.scheduler.core.snapshot import NodeInfo
from services.scheduler.core.vectors import ResourceSpace


@dataclass(frozen=True, slots=True, eq=False)
class NodeBase:
    """The Ready nodes in name order, their index, their allocatable as dense vectors (read
    only: a cycle copies them into `idle`) and its column sums; `static_fits`, which nodes pass
    each kind of task's static filters (placement.Placer.static_fit: the nodes and the task's
    static fields decide it)."""

    source: Sequence[NodeInfo]  # the snapshot's nodes it was made from (compared by identity)
    names: tuple[str, ...]
    nodes: list[NodeInfo]
    index: dict[str, int]
    allocatable: list[list[int]]
    total: list[int]
    static_fits: dict[Hashable, Any] = field(default_factory=dict)
    # The nodes' idle less what the settled gangs hold, and the per-node holdings it was made of.
    settled: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, space: ResourceSpace, source: Sequence[NodeInfo]) -> NodeBase:
        nodes = sorted((n for n in source if n.ready), key=lambda n: n.name)
        allocatable = [space.dense(node.allocatable) for node in nodes]
        # Column sums in C (zip, sum): read several times a cycle (fairness.cluster_total).
        total = [sum(column) for column in zip(*allocatable, strict=True)] if nodes else [0] * space.size
        index = {node.name: i for i, node in enumerate(nodes)}
        return cls(source, space.names, nodes, index, allocatable, total)

    def idle_after(
        self, occupied: Mapping[str, Mapping[str, int]], index: Mapping[str, int]
    ) -> list[list[int]]:
        """Each node's allocatable less what the settled gangs hold on it (`SettledGangs.occupied`,
        whose vectors keep their identity while unchanged), worked out again only for the nodes
        whose holding changed since the last call. Read only: a cycle copies it into `idle`."""
        idle: list[list[int]] | None = self.settled.get("idle")
        before: Mapping[str, Any] = self.settled.get("occupied") or {}
        if idle is None:
            idle, before = list(self.allocatable), {}
        for name in before.keys() - occupied.keys():
            node = self.index.get(name)
            if node is not None:
                idle[node] = self.allocatable[node]
        for name, held in occupied.items():
            node = self.index.get(name)
            if node is None or before.get(name) is held:
                continue
            vector = list(self.allocatable[node])
            for resource, amount in held.items():
                vector[index[resource]] -= amount
            idle[node] = vector
        self.settled["idle"], self.settled["occupied"] = idle, dict(occupied)
        return idle

    @classmethod
    def kept_or_new(cls, kept: NodeBase | None, space: ResourceSpace, source: Sequence[NodeInfo]) -> NodeBase:
        """`kept` when it was made from these very nodes in the same resource names."""
        if kept is not None and kept.source is source and kept.names == space.names:
            return kept
        return cls.of(space, source)
