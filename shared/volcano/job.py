"""The Volcano Job (batch.volcano.sh/v1alpha1): spec, tasks, lifecycle policies and status.

Loaded by the watcher and the controller, defaulted and checked by admission (which works on the
raw JSON but shares these enums), written back by the controller as status. Defaults here are
the CRD schema's (queue "default", maxRetry 3), not the mutating webhook's.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from .common import NetworkTopologySpec, TopLevelObject, VolcanoModel
from .enums import Action, Event, Iteration, JobPhase, NumaPolicy

JOB_API_VERSION: Final = "batch.volcano.sh/v1alpha1"


class LifecyclePolicy(VolcanoModel):
    """An event (or exit code) → action rule; `timeout` is a Go duration string ("10m")."""

    action: Action | None = None
    event: Event | None = None
    events: list[Event] | None = None
    exit_code: int | None = None
    timeout: str | None = None


class DependsOn(VolcanoModel):
    name: list[str] | None = None
    iteration: Iteration | None = None


class PartitionPolicySpec(VolcanoModel):
    total_partitions: int = 0
    partition_size: int = 0
    network_topology: NetworkTopologySpec | None = None
    min_partitions: int = 0


class VolumeSpec(VolcanoModel):
    mount_path: str = ""
    volume_claim_name: str | None = None
    volume_claim: dict[str, Any] | None = None


class TaskSpec(VolcanoModel):
    """One task; `template` is a PodTemplateSpec kept as plain Kubernetes JSON."""

    name: str = ""
    replicas: int = 0
    min_available: int | None = None
    template: dict[str, Any] = Field(default_factory=dict)
    policies: list[LifecyclePolicy] | None = None
    topology_policy: NumaPolicy | None = None
    max_retry: int = 0
    depends_on: DependsOn | None = None
    partition_policy: PartitionPolicySpec | None = None


class JobSpec(VolcanoModel):
    scheduler_name: str = ""
    min_available: int = 0
    volumes: list[VolumeSpec] | None = None
    tasks: list[TaskSpec] = Field(default_factory=list)
    policies: list[LifecyclePolicy] | None = None
    # Plugin name -> CLI-style arguments; YAML `ssh:` with no value loads as None.
    plugins: dict[str, list[str] | None] | None = None
    running_estimate: str | None = None
    queue: str = "default"
    max_retry: int = 3
    ttl_seconds_after_finished: int | None = None
    priority_class_name: str | None = None
    min_success: int | None = None
    network_topology: NetworkTopologySpec | None = None


class JobState(VolcanoModel):
    phase: JobPhase | None = None
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None


class TaskState(VolcanoModel):
    phase: dict[str, int] | None = None


class JobCondition(VolcanoModel):
    status: JobPhase
    last_transition_time: str | None = None


class JobStatus(VolcanoModel):
    state: JobState = Field(default_factory=JobState)
    min_available: int = 0
    task_status_count: dict[str, TaskState] | None = None
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    version: int = 0
    retry_count: int = 0
    running_duration: str | None = None
    controlled_resources: dict[str, str] | None = None
    conditions: list[JobCondition] | None = None


class Job(TopLevelObject):
    api_version: Literal["batch.volcano.sh/v1alpha1"] = JOB_API_VERSION
    kind: Literal["Job"] = "Job"
    spec: JobSpec = Field(default_factory=JobSpec)
    status: JobStatus = Field(default_factory=JobStatus)
