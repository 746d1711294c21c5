"""The events a job's lifecycle reacts to, as the controller shell hands them to `transition`.

The watcher's pod, PodGroup, Job and Command changes become these (see `observe` for the
classification Volcano's handlers apply); each carries what policy resolution needs: the event
name, the task and pod it concerns, the pod's job version and the exit code.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.volcano.enums import Event


@dataclass(frozen=True)
class _PodEvent:
    pod: str
    task: str
    pod_uid: str = ""
    job_version: int = 0
    job_uid: str = ""
    partition: str = ""


@dataclass(frozen=True)
class PodPending(_PodEvent):
    """A pod was created, or went back to Pending (only a policy with a timeout matches)."""

    event = Event.POD_PENDING


@dataclass(frozen=True)
class PodRunning(_PodEvent):
    event = Event.POD_RUNNING


@dataclass(frozen=True)
class PodFailed(_PodEvent):
    """A pod turned Failed; `exit_code` is its first container's termination code."""

    exit_code: int = 0
    event = Event.POD_FAILED


@dataclass(frozen=True)
class PodEvicted(_PodEvent):
    """A pod of the job was deleted by someone else."""

    event = Event.POD_EVICTED


@dataclass(frozen=True)
class PodSucceeded(_PodEvent):
    """A pod turned Succeeded but its task is not complete yet: only the counts change."""

    event = Event.OUT_OF_SYNC


@dataclass(frozen=True)
class TaskCompleted(_PodEvent):
    """The last pod of a task turned Succeeded."""

    event = Event.TASK_COMPLETED


@dataclass(frozen=True)
class TaskFailed(_PodEvent):
    """The task's live pods restarted containers at least `task.maxRetry` times."""

    event = Event.TASK_FAILED


@dataclass(frozen=True)
class OutOfSync:
    """The job was added, its spec or phase changed, or some pod changed without a named event."""

    pod: str = ""
    task: str = ""
    event = Event.OUT_OF_SYNC


@dataclass(frozen=True)
class JobUpdated:
    """The Job's spec changed (scaling, priority...). Volcano raises it as OutOfSync, so policies
    naming JobUpdated never fire; we keep that."""

    event = Event.OUT_OF_SYNC


@dataclass(frozen=True)
class PodGroupPhaseChanged:
    """The scheduler moved the job's PodGroup; `Unknown` is the policy event, the rest only sync."""

    phase: str

    @property
    def event(self) -> str:
        return Event.JOB_UNKNOWN.value if self.phase == "Unknown" else ""


@dataclass(frozen=True)
class CommandIssued:
    """A bus.volcano.sh Command for this job was consumed (and deleted) by the shell."""

    action: str
    event = Event.COMMAND_ISSUED


@dataclass(frozen=True)
class TimerFired:
    """A timer the transition scheduled came due (a delayed policy action, or the TTL)."""

    key: str


@dataclass(frozen=True)
class RetryLimitReached:
    """The shell failed to apply `action`'s effects `--max-requeue-num` times: terminate."""

    action: str


@dataclass(frozen=True)
class PodCreationFailed:
    """The shell could not create some pods; `errors` are the API errors' texts."""

    errors: tuple[str, ...]


# The events a job's policies are asked about (each names its `event`), and the rest.
PolicyEvent = (
    PodPending
    | PodRunning
    | PodFailed
    | PodEvicted
    | PodSucceeded
    | TaskCompleted
    | TaskFailed
    | OutOfSync
    | JobUpdated
    | PodGroupPhaseChanged
    | CommandIssued
)
JobEvent = PolicyEvent | TimerFired | RetryLimitReached | PodCreationFailed
POD_EVENTS = (PodPending, PodRunning, PodFailed, PodEvicted)
