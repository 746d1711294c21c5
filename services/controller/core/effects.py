"""Effects: what a lifecycle transition asks the controller shell to do, as plain frozen data.

`lifecycle.transition` returns them in the order they must be applied; the shell applies each
idempotently (create-if-absent, delete-if-present, upsert by key), so a redelivered event that
produces the same effects again changes nothing. Manifests are built by the shell from the Job's
JSON with `pods.build_pod`, `jobpodgroup.build_podgroup` and `plugins.plugin_objects`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class DesiredPod:
    """A pod the job should have: `<job>-<task>-<pod_index>` of `spec.tasks[task_index]`."""

    task_index: int
    pod_index: int
    name: str
    task: str


@dataclass(frozen=True)
class CreatePods:
    """Create these pods (AlreadyExists is success) from `build_pod(job, ...)`, stamped with this
    job version and retry count. A failure is reported back as `PodCreationFailed`."""

    pods: tuple[DesiredPod, ...]
    job_version: int
    retry_count: int


@dataclass(frozen=True)
class DeletePods:
    """Mark each pod `volcano.sh/controller-out-of-sync: "true"`, then delete it (NotFound is
    success); `reason` is the action or rule that killed them."""

    names: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class EnsurePodGroup:
    """Create the PodGroup from `build_podgroup(job)`, or update it when `podgroup_needs_update`."""

    name: str


@dataclass(frozen=True)
class DeletePodGroup:
    name: str


@dataclass(frozen=True)
class EnsurePluginResources:
    """Create the plugins' objects (`plugin_objects(job)`) that do not exist yet; with `refresh`
    also rewrite the svc hosts ConfigMap (the job was scaled). Never touch a Secret the job does
    not own (`plugins.ssh.secret_conflict`)."""

    plugins: tuple[str, ...]
    refresh: bool = False


@dataclass(frozen=True)
class DeletePluginResources:
    """Delete the objects these plugins created for the job (only those the job owns)."""

    plugins: tuple[str, ...]


@dataclass(frozen=True)
class EnsurePVCs:
    """Volumes: create a claim (`pods.build_pvc`) for each volume without a claim name (writing
    the generated name back into the Job spec), and check that named claims exist (else event
    PVCError "pvc <n> is not found, the job will be in the Pending state until the PVC is
    created")."""

    claim_names: tuple[str, ...]
    to_generate: int


@dataclass(frozen=True)
class UpdateJobStatus:
    """Write `Job.status` (status subresource) with exactly this content."""

    status: dict[str, Any]


@dataclass(frozen=True)
class RecordEvent:
    """A Kubernetes Event on the Job (component `vc-controller-manager`)."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class ScheduleTimer:
    """Call `transition(state, TimerFired(key), ...)` at `at`; replaces a timer of the same key."""

    key: str
    at: datetime
    action: str


@dataclass(frozen=True)
class CancelTimer:
    key: str


@dataclass(frozen=True)
class DeleteJob:
    """Delete the Job (foreground propagation, precondition on this UID): its TTL expired."""

    uid: str
    reason: str


Effect = (
    CreatePods
    | DeletePods
    | EnsurePodGroup
    | DeletePodGroup
    | EnsurePluginResources
    | DeletePluginResources
    | EnsurePVCs
    | UpdateJobStatus
    | RecordEvent
    | ScheduleTimer
    | CancelTimer
    | DeleteJob
)
