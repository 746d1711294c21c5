"""Pure: HyperNode rows and a PodGroup's topology column as the scheduler core's dataclasses.

Ingest keeps a HyperNode's `spec.members` and a PodGroup's `spec.networkTopology` and
`spec.subGroupPolicy` as written (projection.py); the snapshot reader turns them into
`HyperNodeInfo`, `TopologyConstraint` and `SubGroupConstraint` here. What admission would refuse
(a member with no selector, a mode that is neither hard nor soft) is read leniently: such a
member selects nothing, an unknown mode reads as hard, as Volcano's default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.scheduler.core.snapshot_topology import (
    SOFT,
    HyperNodeInfo,
    SubGroupConstraint,
    TopologyConstraint,
)
from shared.volcano.hypernodes import parse_members


def hyper_node(row: Any) -> HyperNodeInfo:
    members = parse_members((row.members or {}).get("items"))
    return HyperNodeInfo(row.name, int(row.tier or 0), str(row.tier_name or ""), members)


def constraint(raw: Any) -> TopologyConstraint | None:
    if not isinstance(raw, Mapping):
        return None
    tier = raw.get("highestTierAllowed")
    return TopologyConstraint(
        mode=SOFT if raw.get("mode") == SOFT else "hard",
        highest_tier=int(tier) if isinstance(tier, int) else None,
        highest_tier_name=str(raw.get("highestTierName") or ""),
    )


def gang_topology(
    column: Mapping[str, Any] | None,
) -> tuple[TopologyConstraint | None, tuple[SubGroupConstraint, ...]]:
    """(the PodGroup's own constraint, its sub-groups) from the pod_groups.topology column."""
    if not column:
        return None, ()
    groups = tuple(
        SubGroupConstraint(
            name=str(group.get("name") or ""),
            size=int(group.get("subGroupSize") or 1),
            min_groups=int(group.get("minSubGroups") or 0),
            topology=constraint(group.get("networkTopology")),
        )
        for group in column.get("subGroupPolicy") or ()
        if isinstance(group, Mapping)
    )
    return constraint(column.get("networkTopology")), groups
