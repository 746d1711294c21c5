"""The scenario file as typed data: the cluster, the scheduler configuration and the steps.

`loading.load_scenario` parses a YAML file into `Scenario`; the runner, the stack and the steps
read only these models. Every model refuses unknown keys, so a typo in a scenario is an error
that names the key, never a condition silently skipped. Expectations live in `expectations.py`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from phalanx.scenario.expectations import Expectation, Seconds, Selector
from shared.domain.quantity import QuantityError, parse_quantity

__all__ = [
    "ClusterSpec",
    "CommandStep",
    "DeleteStep",
    "NodeEntry",
    "NodeStep",
    "PatchStep",
    "PodStep",
    "PodsStep",
    "PriorityClassEntry",
    "QueueEntry",
    "QueueStep",
    "Scenario",
    "SchedulerSpec",
    "Seconds",
    "Step",
    "Taint",
]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _quantity_text(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"a Kubernetes quantity such as '4' or '8Gi' is needed, got {value!r}")
    try:
        parse_quantity(value)
    except QuantityError as error:
        raise ValueError(str(error)) from None
    return str(value)


QuantityText = Annotated[str, BeforeValidator(_quantity_text)]
ResourceMap = dict[str, QuantityText]
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def _object_name(value: Any) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise ValueError(f"{value!r} is not a valid Kubernetes object name")
    return value


ObjectName = Annotated[str, BeforeValidator(_object_name)]


class Taint(Strict):
    key: str
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class NodeShape(Strict):
    """What a node offers; shared by `cluster.nodes` entries and the `node: add` step."""

    cpu: QuantityText = "8"
    memory: QuantityText = "32Gi"
    gpu: int = Field(0, ge=0)
    pods: int = Field(110, ge=0)
    extended: ResourceMap = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    # DRA devices its drivers publish as ResourceSlices: {driver, count, namePrefix, attributes, capacity}.
    devices: list[dict[str, Any]] = Field(default_factory=list)


class NodeEntry(NodeShape):
    name: ObjectName | None = None
    name_prefix: str | None = Field(None, alias="namePrefix")
    count: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _named(self) -> NodeEntry:
        if self.name is not None and (self.name_prefix is not None or self.count is not None):
            raise ValueError("give either name, or namePrefix and count, not both")
        if self.name is None and (self.name_prefix is None or self.count is None):
            raise ValueError("a node needs a name, or namePrefix and count")
        return self

    def names(self) -> list[str]:
        if self.name is not None:
            return [self.name]
        return [f"{self.name_prefix}{i}" for i in range(self.count or 0)]


class QueueEntry(Strict):
    name: ObjectName
    weight: int = Field(1, ge=1)
    capability: ResourceMap | None = None
    guarantee: ResourceMap | None = None
    reclaimable: bool | None = None
    priority: int | None = None
    parent: str | None = None
    state: Literal["Open", "Closed"] | None = None
    deserved: ResourceMap | None = None


class PriorityClassEntry(Strict):
    name: ObjectName
    value: int
    global_default: bool | None = Field(None, alias="globalDefault")
    preemption_policy: Literal["PreemptLowerPriority", "Never"] | None = Field(None, alias="preemptionPolicy")
    description: str | None = None


class ClusterSpec(Strict):
    namespaces: list[ObjectName] = Field(default_factory=list)
    nodes: list[NodeEntry] = Field(min_length=1)
    queues: list[QueueEntry] = Field(default_factory=list)
    priority_classes: list[PriorityClassEntry] = Field(default_factory=list, alias="priorityClasses")

    @model_validator(mode="after")
    def _unique(self) -> ClusterSpec:
        for what, names in (
            ("node", [n for entry in self.nodes for n in entry.names()]),
            ("queue", [q.name for q in self.queues]),
            ("priority class", [p.name for p in self.priority_classes]),
        ):
            repeated = sorted({n for n in names if names.count(n) > 1})
            if repeated:
                raise ValueError(f"duplicate {what} names: {', '.join(repeated)}")
        return self

    def all_namespaces(self) -> list[str]:
        """The scenario's namespaces, "default" first, each once."""
        return list(dict.fromkeys(["default", *self.namespaces]))


class SchedulerSpec(Strict):
    conf: str


# -- steps ---------------------------------------------------------------------------------


class ObjectRef(Strict):
    kind: str
    namespace: str | None = None
    name: str


class DeleteStep(ObjectRef):
    pass


class PatchStep(ObjectRef):
    merge: dict[str, Any]


class PodStep(Strict):
    namespace: str = "default"
    name: str
    action: Literal["succeed", "fail", "evict", "delete"]
    exit_code: int | None = Field(None, alias="exitCode")

    @model_validator(mode="after")
    def _exit_code(self) -> PodStep:
        _check_exit_code(self.action, self.exit_code)
        return self


class PodsStep(Strict):
    namespace: str = "default"
    job: str | None = None
    task: str | None = None
    selector: Selector | None = None
    action: Literal["succeed", "fail", "evict", "delete"]
    exit_code: int | None = Field(None, alias="exitCode")

    @model_validator(mode="after")
    def _target(self) -> PodsStep:
        if (self.job is None) == (self.selector is None):
            raise ValueError("give either job (optionally with task) or selector")
        if self.task is not None and self.job is None:
            raise ValueError("task needs job")
        _check_exit_code(self.action, self.exit_code)
        return self

    def label_selector(self) -> str:
        if self.selector is not None:
            return self.selector
        task = f",volcano.sh/task-spec={self.task}" if self.task else ""
        return f"volcano.sh/job-name={self.job}{task}"


def _check_exit_code(action: str, exit_code: int | None) -> None:
    if exit_code is not None and action != "fail":
        raise ValueError("exitCode belongs to action fail")
    if action == "fail" and exit_code == 0:
        raise ValueError("a failing pod needs a non-zero exitCode")


NodeAction = Literal["add", "remove", "cordon", "uncordon", "notready", "ready", "taint", "untaint"]


class NodeStep(NodeShape):
    name: ObjectName
    action: NodeAction
    taint: Taint | None = None

    @model_validator(mode="after")
    def _fields_fit_action(self) -> NodeStep:
        shape = set(NodeShape.model_fields) & self.model_fields_set
        if shape and self.action != "add":
            raise ValueError(f"{', '.join(sorted(shape))} only go with action add")
        if (self.taint is None) == (self.action in ("taint", "untaint")):
            raise ValueError("taint goes with, and only with, actions taint and untaint")
        return self


class CommandStep(Strict):
    namespace: str = "default"
    job: str
    action: Literal[
        "AbortJob",
        "RestartJob",
        "RestartTask",
        "RestartPod",
        "TerminateJob",
        "CompleteJob",
        "ResumeJob",
        "SyncJob",
        "EnqueueJob",
        "SyncQueue",
        "OpenQueue",
        "CloseQueue",
    ]


class QueueStep(Strict):
    name: str
    action: Literal["open", "close"]


class Step(Strict):
    """One step: exactly one of its keys is given."""

    apply: str | None = None
    delete: DeleteStep | None = None
    pod: PodStep | None = None
    pods: PodsStep | None = None
    node: NodeStep | None = None
    patch: PatchStep | None = None
    command: CommandStep | None = None
    queue: QueueStep | None = None
    sleep: Seconds | None = None
    expect: Expectation | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Step:
        given = [name for name in type(self).model_fields if getattr(self, name) is not None]
        if len(given) != 1:
            kinds = ", ".join(type(self).model_fields)
            raise ValueError(f"a step has exactly one of {kinds}; got {given or 'none'}")
        return self

    @property
    def kind(self) -> str:
        return next(name for name in type(self).model_fields if getattr(self, name) is not None)

    @property
    def writes(self) -> bool:
        """Steps whose refusal by admission a following `denied` may expect."""
        return self.kind in ("apply", "patch", "delete")


class Scenario(Strict):
    name: str = Field(min_length=1)
    description: str | None = None
    cluster: ClusterSpec
    scheduler: SchedulerSpec | None = None
    steps: list[Step] = Field(min_length=1)
