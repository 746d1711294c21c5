"""The Queue (scheduling.volcano.sh/v1beta1, cluster-scoped): weights, limits and hierarchy.

Read by admission (is the queue Open, a leaf, within its parent), by the scheduler (share,
capability, guarantee, reclaim) and written by the controller (status.state). Resource lists
keep their spelling; `*_vector()` helpers give milli-unit `Resources`.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from shared.domain.resources import Resources

from .common import ResourceList, TopLevelObject, VolcanoModel, to_resources
from .enums import DequeueStrategy, QueueState

QUEUE_API_VERSION: Final = "scheduling.volcano.sh/v1beta1"
DEFAULT_QUEUE = "default"
ROOT_QUEUE = "root"


class Guarantee(VolcanoModel):
    resource: ResourceList | None = None


class Reservation(VolcanoModel):
    nodes: list[str] | None = None
    resource: ResourceList | None = None


class Cluster(VolcanoModel):
    name: str | None = None
    weight: int | None = None
    capacity: ResourceList | None = None


class NodeGroupAffinity(VolcanoModel):
    required_during_scheduling_ignored_during_execution: list[str] | None = None
    preferred_during_scheduling_ignored_during_execution: list[str] | None = None


class Affinity(VolcanoModel):
    node_group_affinity: NodeGroupAffinity | None = None
    node_group_anti_affinity: NodeGroupAffinity | None = None


class QueueSpec(VolcanoModel):
    weight: int = 1
    capability: ResourceList | None = None
    reclaimable: bool | None = None
    extend_clusters: list[Cluster] | None = None
    guarantee: Guarantee | None = None
    affinity: Affinity | None = None
    type: str | None = None
    parent: str | None = None
    deserved: ResourceList | None = None
    priority: int = 0
    dequeue_strategy: DequeueStrategy | None = None

    def capability_vector(self) -> Resources:
        return to_resources(self.capability)

    def deserved_vector(self) -> Resources:
        return to_resources(self.deserved)

    def guarantee_vector(self) -> Resources:
        return to_resources(self.guarantee.resource if self.guarantee else None)


class QueueStatus(VolcanoModel):
    state: QueueState | None = None
    unknown: int = 0
    pending: int = 0
    running: int = 0
    inqueue: int = 0
    completed: int = 0
    reservation: Reservation | None = None
    allocated: ResourceList | None = None


class Queue(TopLevelObject):
    api_version: Literal["scheduling.volcano.sh/v1beta1"] = QUEUE_API_VERSION
    kind: Literal["Queue"] = "Queue"
    spec: QueueSpec = Field(default_factory=QueueSpec)
    status: QueueStatus = Field(default_factory=QueueStatus)
