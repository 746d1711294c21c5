"""Pure: Volcano's HyperNodes as the scheduler core sees them, and their node sets.

A HyperNode (topology.volcano.sh/v1alpha1) is a network performance domain: a switch and what
hangs under it. The snapshot carries `HyperNodeInfo`s as written; `resolve_domains` turns them
into `Domain`s, each with the set of node indices under it (resolved by
`shared.volcano.hypernodes`), once per cycle, not per gang, with an index of the domains of
each node and of the tier each tier name stands for.

The constraints a PodGroup carries (`spec.networkTopology`, `spec.subGroupPolicy[]`) are
`TopologyConstraint` and `SubGroupConstraint`, read by the shell from the PodGroup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from services.scheduler.core.snapshot_topology import (
    HyperNodeInfo,
    HyperNodeMember,
    SubGroupConstraint,
    TopologyConstraint,
)
from shared.volcano.hypernodes import resolve_node_sets

__all__ = [
    "Domain",
    "Domains",
    "HyperNodeInfo",
    "HyperNodeMember",
    "SubGroupConstraint",
    "TopologyConstraint",
    "resolve_domains",
]


@dataclass(slots=True, eq=False)
class Domain:
    """One HyperNode with the indices (into the cycle's node list) of the nodes under it."""

    name: str
    tier: int
    tier_name: str
    nodes: tuple[int, ...]
    node_set: frozenset[int]
    index: int = 0  # position in `Domains.all`, for the usage vectors


@dataclass(slots=True)
class Domains:
    all: list[Domain] = field(default_factory=list)
    by_name: dict[str, Domain] = field(default_factory=dict)
    tier_names: dict[str, int] = field(default_factory=dict)
    # node index -> the domains containing it, lowest tier first
    of_node: list[list[Domain]] = field(default_factory=list)

    @property
    def tiers(self) -> list[int]:
        return sorted({d.tier for d in self.all})

    def limit(self, constraint: TopologyConstraint) -> int | None:
        """The highest tier the constraint allows; None when it names a tier no HyperNode has."""
        if constraint.highest_tier is not None:
            return constraint.highest_tier
        if constraint.highest_tier_name:
            return self.tier_names.get(constraint.highest_tier_name)
        # hard mode with no limit: any tier (Volcano treats it as the highest tier there is)
        return max((d.tier for d in self.all), default=None)

    def within(self, limit: int, inside: frozenset[int] | None, holding: frozenset[int]) -> list[Domain]:
        """Domains of tier <= `limit`, inside the node set `inside` (if any), containing every
        node in `holding`; lowest tier first, then by name."""
        found = [
            d
            for d in self.all
            if d.tier <= limit and holding <= d.node_set and (inside is None or d.node_set <= inside)
        ]
        found.sort(key=lambda d: (d.tier, d.name))
        return found


def resolve_domains(
    hyper_nodes: Sequence[HyperNodeInfo], node_names: Sequence[str], node_labels: Sequence[Mapping[str, str]]
) -> Domains:
    """Each HyperNode's node set (indices into `node_names`), resolved through nested members."""
    node_sets = resolve_node_sets(hyper_nodes, node_names, node_labels)
    domains = Domains(of_node=[[] for _ in node_names])
    for info in sorted(hyper_nodes, key=lambda h: (h.tier, h.name)):
        node_set = node_sets[info.name]
        domain = Domain(
            info.name, info.tier, info.tier_name, tuple(sorted(node_set)), node_set, len(domains.all)
        )
        domains.all.append(domain)
        domains.by_name[info.name] = domain
        if info.tier_name:
            domains.tier_names.setdefault(info.tier_name, info.tier)
        for node in node_set:
            domains.of_node[node].append(domain)
    return domains
