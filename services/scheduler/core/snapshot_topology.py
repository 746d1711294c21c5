"""The snapshot's topology inputs: HyperNodes and the network-topology constraints of a gang.

Plain frozen data read by the shell from HyperNode objects (topology.volcano.sh/v1alpha1) and
from a PodGroup's `spec.networkTopology` and `spec.subGroupPolicy[]`; `snapshot.py` carries them
and `hypernodes.py` resolves them. Kept apart from `snapshot.py` so that the core's picture of
the network reads as one small module.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.volcano.hypernodes import HyperNodeInfo, HyperNodeMember

__all__ = ["HARD", "SOFT", "HyperNodeInfo", "HyperNodeMember", "SubGroupConstraint", "TopologyConstraint"]

HARD = "hard"
SOFT = "soft"


@dataclass(frozen=True, slots=True)
class TopologyConstraint:
    """`networkTopology`: mode hard (all pods within one HyperNode of tier <= the limit, or none)
    or soft (the lowest tier that fits, else anywhere); at most one of the two limits is set."""

    mode: str = HARD
    highest_tier: int | None = None
    highest_tier_name: str = ""

    @property
    def hard(self) -> bool:
        return self.mode != SOFT


@dataclass(frozen=True, slots=True)
class SubGroupConstraint:
    """A `subGroupPolicy[]` entry as Volcano's controller derives it from a task's
    `partitionPolicy`: the pods of task `name` form partitions of `size` pods (told apart by their
    volcano.sh/partition-id label), each placed as a gang of its own under `topology`."""

    name: str
    size: int = 1
    min_groups: int = 0
    topology: TopologyConstraint | None = None
