"""The job as the lifecycle sees it: a frozen summary of spec, status, pods, PodGroup and timers.

Built by `observe.observe_job` from the Kubernetes JSON the watcher delivered, consumed and
returned by `lifecycle.transition`. Nothing here is Kubernetes JSON except on the way out
(`status.job_status`), so the transition can be tested on tiny hand-written states.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from services.controller.core.policies import Policy
from shared.volcano.enums import JobPhase

POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
FINISHED_PHASES = frozenset({JobPhase.COMPLETED, JobPhase.FAILED, JobPhase.TERMINATED})


@dataclass(frozen=True)
class PodView:
    """One pod of the job, reduced to what the lifecycle decides on."""

    name: str
    task: str
    index: int
    uid: str = ""
    phase: str = "Pending"
    job_version: int = 0
    deleting: bool = False
    out_of_sync: bool = False
    containers_ready: bool = False
    restarts: int = 0
    partition: str = ""


@dataclass(frozen=True)
class ObservedDependsOn:
    names: tuple[str, ...]
    iteration: str = "all"


@dataclass(frozen=True)
class ObservedTaskSpec:
    """A task of the job's spec: what the lifecycle needs of it (the template stays in the Job)."""

    name: str
    replicas: int
    min_available: int | None = None
    max_retry: int = 3
    policies: tuple[Policy, ...] = ()
    depends_on: ObservedDependsOn | None = None
    partition_size: int = 0


@dataclass(frozen=True)
class ObservedCondition:
    status: str
    last_transition_time: datetime


@dataclass(frozen=True)
class ObservedJobStatus:
    """`Job.status` as Volcano keeps it; `status.job_status` renders it as JSON."""

    phase: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    version: int = 0
    retry_count: int = 0
    min_available: int = 0
    task_status_count: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    controlled_resources: Mapping[str, str] = field(default_factory=dict)
    conditions: tuple[ObservedCondition, ...] = ()
    running_duration: timedelta | None = None


@dataclass(frozen=True)
class PodGroupView:
    """The job's PodGroup as last observed; `unready_*` is its newest True condition if that is
    not `Scheduled` (what the PodGroupPending event reports)."""

    name: str
    phase: str = ""
    unready_type: str = ""
    unready_message: str = ""


@dataclass(frozen=True)
class DelayedAction:
    """A policy action waiting for its timeout; keyed by the pod that raised it (Volcano's key)."""

    key: str
    action: str
    event: str
    due: datetime
    task: str = ""
    pod: str = ""
    pod_uid: str = ""
    partition: str = ""


@dataclass(frozen=True)
class Volume:
    mount_path: str
    claim_name: str = ""
    has_claim_spec: bool = False


@dataclass(frozen=True)
class ObservedJob:
    """Everything `transition` reads about one job, and everything it returns changed."""

    uid: str
    namespace: str
    name: str
    created_at: datetime | None = None
    queue: str = "default"
    min_available: int = 0
    min_success: int | None = None
    max_retry: int = 3
    ttl_seconds_after_finished: int | None = None
    tasks: tuple[ObservedTaskSpec, ...] = ()
    policies: tuple[Policy, ...] = ()
    plugins: tuple[str, ...] = ()
    volumes: tuple[Volume, ...] = ()
    status: ObservedJobStatus = ObservedJobStatus()
    pods: tuple[PodView, ...] = ()
    podgroup: PodGroupView | None = None
    timers: tuple[DelayedAction, ...] = ()
    deleting: bool = False

    @property
    def phase(self) -> str:
        return self.status.phase

    @property
    def total_replicas(self) -> int:
        return sum(t.replicas for t in self.tasks)

    @property
    def total_task_min_available(self) -> int:
        return sum(t.replicas if t.min_available is None else t.min_available for t in self.tasks)

    @property
    def podgroup_name(self) -> str:
        return f"{self.name}-{self.uid}"

    def task(self, name: str) -> ObservedTaskSpec | None:
        return next((t for t in self.tasks if t.name == name), None)

    def pods_of(self, task: str) -> tuple[PodView, ...]:
        return tuple(p for p in self.pods if p.task == task)

    def pod(self, name: str) -> PodView | None:
        return next((p for p in self.pods if p.name == name), None)

    def timer(self, key: str) -> DelayedAction | None:
        return next((t for t in self.timers if t.key == key), None)


def pod_name(job: str, task: str, index: int) -> str:
    """Volcano's pod name, `<job>-<task>-<index>`."""
    return f"{job}-{task}-{index}"
