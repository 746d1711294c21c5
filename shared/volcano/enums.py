"""Volcano's enumerations: phases, states, lifecycle events and actions, with their wire values.

Shared by the models in this package, the admission rules (which events and actions a user may
write in a policy), the job lifecycle and the scheduler. Values are exactly Volcano's strings.
"""

from __future__ import annotations

from enum import StrEnum


class JobPhase(StrEnum):
    PENDING = "Pending"
    ABORTING = "Aborting"
    ABORTED = "Aborted"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    TERMINATING = "Terminating"
    TERMINATED = "Terminated"
    FAILED = "Failed"


class PodGroupPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    INQUEUE = "Inqueue"
    COMPLETED = "Completed"


class PodGroupConditionType(StrEnum):
    UNSCHEDULABLE = "Unschedulable"
    SCHEDULED = "Scheduled"


class QueueState(StrEnum):
    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"


class Event(StrEnum):
    """Events a job's lifecycle reacts to (bus.volcano.sh)."""

    ANY = "*"
    POD_FAILED = "PodFailed"
    POD_EVICTED = "PodEvicted"
    POD_PENDING = "PodPending"
    POD_RUNNING = "PodRunning"
    JOB_UNKNOWN = "Unknown"
    TASK_COMPLETED = "TaskCompleted"
    OUT_OF_SYNC = "OutOfSync"
    COMMAND_ISSUED = "CommandIssued"
    JOB_UPDATED = "JobUpdated"
    TASK_FAILED = "TaskFailed"


class Action(StrEnum):
    """Actions a policy or a Command asks for (bus.volcano.sh)."""

    ABORT_JOB = "AbortJob"
    RESTART_JOB = "RestartJob"
    RESTART_TASK = "RestartTask"
    RESTART_POD = "RestartPod"
    RESTART_PARTITION = "RestartPartition"
    TERMINATE_JOB = "TerminateJob"
    COMPLETE_JOB = "CompleteJob"
    RESUME_JOB = "ResumeJob"
    SYNC_JOB = "SyncJob"
    ENQUEUE_JOB = "EnqueueJob"
    SYNC_QUEUE = "SyncQueue"
    OPEN_QUEUE = "OpenQueue"
    CLOSE_QUEUE = "CloseQueue"


# What a user may write in a Job's lifecycle policies; the rest are raised internally only.
# Volcano keeps these in Go maps, whose order is random; a fixed order keeps messages stable.
POLICY_EVENTS: tuple[Event, ...] = (
    Event.ANY,
    Event.POD_FAILED,
    Event.POD_EVICTED,
    Event.POD_PENDING,
    Event.JOB_UNKNOWN,
    Event.TASK_COMPLETED,
    Event.TASK_FAILED,
    Event.JOB_UPDATED,
)
POLICY_ACTIONS: tuple[Action, ...] = (
    Action.ABORT_JOB,
    Action.RESTART_JOB,
    Action.RESTART_TASK,
    Action.RESTART_POD,
    Action.RESTART_PARTITION,
    Action.TERMINATE_JOB,
    Action.COMPLETE_JOB,
    Action.RESUME_JOB,
)


class NumaPolicy(StrEnum):
    NONE = "none"
    BEST_EFFORT = "best-effort"
    RESTRICTED = "restricted"
    SINGLE_NUMA_NODE = "single-numa-node"


class Iteration(StrEnum):
    ANY = "any"
    ALL = "all"


class NetworkTopologyMode(StrEnum):
    HARD = "hard"
    SOFT = "soft"


class DequeueStrategy(StrEnum):
    FIFO = "fifo"
    TRAVERSE = "traverse"
