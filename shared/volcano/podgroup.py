"""The PodGroup (scheduling.volcano.sh/v1beta1): the gang the scheduler admits and places.

Created by the controller for each Volcano Job, or by other operators (KubeRay, Kubeflow) for
plain pods; read by the scheduler; its status is written by the scheduler. `minResources` keeps
the quantities as written; `min_resources_vector()` gives the milli-unit view.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from shared.domain.resources import Resources

from .common import NetworkTopologySpec, ResourceList, TopLevelObject, VolcanoModel, to_resources
from .enums import PodGroupConditionType, PodGroupPhase

PODGROUP_API_VERSION: Final = "scheduling.volcano.sh/v1beta1"


class SubGroupPolicySpec(VolcanoModel):
    name: str | None = None
    network_topology: NetworkTopologySpec | None = None
    sub_group_size: int | None = None
    min_sub_groups: int | None = None
    label_selector: dict[str, Any] | None = None
    match_label_keys: list[str] | None = None


class PodGroupSpec(VolcanoModel):
    min_member: int = 0
    min_task_member: dict[str, int] | None = None
    queue: str = "default"
    priority_class_name: str | None = None
    min_resources: ResourceList | None = None
    network_topology: NetworkTopologySpec | None = None
    sub_group_policy: list[SubGroupPolicySpec] | None = None

    def min_resources_vector(self) -> Resources:
        return to_resources(self.min_resources)


class PodGroupCondition(VolcanoModel):
    type: PodGroupConditionType | None = None
    status: str | None = None
    transition_id: str | None = Field(default=None, alias="transitionID")
    last_transition_time: str | None = None
    reason: str | None = None
    message: str | None = None


class PodGroupStatus(VolcanoModel):
    phase: PodGroupPhase | None = None
    conditions: list[PodGroupCondition] | None = None
    running: int = 0
    succeeded: int = 0
    failed: int = 0


class PodGroup(TopLevelObject):
    api_version: Literal["scheduling.volcano.sh/v1beta1"] = PODGROUP_API_VERSION
    kind: Literal["PodGroup"] = "PodGroup"
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: PodGroupStatus = Field(default_factory=PodGroupStatus)
