"""Every row of Volcano's job state table: phase x action -> operation and next phase."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from services.controller.core import events as ev
from services.controller.core.effects import DeletePodGroup, DeletePods, UpdateJobStatus
from services.controller.core.jobstate import ObservedTaskSpec, PodView
from services.controller.core.lifecycle import execute, transition
from services.controller.core.policies import Policy
from services.controller.core.reconcile import Outcome, Target

from .builders import NOW, pods, state

pytestmark = pytest.mark.unit

WORKER = Target("task", task="worker")
WHOLE_JOB = Target("task")
MIXED = (*pods("worker", "Running", "Succeeded", "Failed"),)
TWO_TASKS = (ObservedTaskSpec("ps", 1, min_available=1), ObservedTaskSpec("worker", 2, min_available=2))
TWO_TASK_PODS = (*pods("ps", "Running"), *pods("worker", "Running", "Running"))


@dataclass(frozen=True)
class Row:
    id: str
    phase: str
    action: str
    expected_phase: str
    target: Target = WHOLE_JOB
    pod_list: tuple[PodView, ...] = MIXED
    kwargs: dict[str, Any] = field(default_factory=dict)
    retry_delta: int = 0
    version_delta: int = 0
    deleted: frozenset[str] = frozenset()
    podgroup_deleted: bool = False


def _full_kill(phase: str, action: str, to: str, **more: Any) -> Row:
    """Abort/Complete/Terminate: finished pods kept, the rest deleted, version bumped."""
    return Row(
        f"{phase}-{action}",
        phase,
        action,
        to,
        version_delta=1,
        deleted=frozenset({"job-worker-0"}),
        podgroup_deleted=True,
        **more,
    )


ROWS = [
    # Pending and Running share their kill rows.
    *(
        row
        for phase in ("Pending", "Running")
        for row in (
            Row(
                f"{phase}-RestartJob",
                phase,
                "RestartJob",
                "Restarting",
                retry_delta=1,
                version_delta=1,
                podgroup_deleted=True,
                deleted=frozenset({"job-worker-0", "job-worker-1", "job-worker-2"}),
            ),
            Row(
                f"{phase}-RestartTask",
                phase,
                "RestartTask",
                "Restarting",
                target=WORKER,
                pod_list=TWO_TASK_PODS,
                kwargs={"tasks": TWO_TASKS},
                retry_delta=1,
                deleted=frozenset({"job-worker-0", "job-worker-1"}),
            ),
            Row(
                f"{phase}-RestartPod",
                phase,
                "RestartPod",
                "Restarting",
                target=Target("pod", task="worker", pod="job-worker-1"),
                retry_delta=1,
                deleted=frozenset({"job-worker-1"}),
            ),
            Row(
                f"{phase}-RestartPartition",
                phase,
                "RestartPartition",
                "Restarting",
                target=Target("partition", task="worker", partition="1"),
                pod_list=(
                    PodView("job-worker-0", "worker", 0, phase="Running", partition="0"),
                    PodView("job-worker-1", "worker", 1, phase="Running", partition="1"),
                ),
                retry_delta=1,
                deleted=frozenset({"job-worker-1"}),
            ),
            _full_kill(phase, "AbortJob", "Aborting"),
            _full_kill(phase, "CompleteJob", "Completing"),
            _full_kill(phase, "TerminateJob", "Terminating"),
        )
    ),
    # Pending: anything else syncs, Running once minAvailable pods run or finished.
    Row(
        "Pending-SyncJob-enough",
        "Pending",
        "SyncJob",
        "Running",
        pod_list=pods("worker", "Running", "Running", "Succeeded"),
    ),
    Row(
        "Pending-SyncJob-short",
        "Pending",
        "SyncJob",
        "Pending",
        pod_list=pods("worker", "Running", "Pending", "Pending"),
    ),
    Row(
        "Pending-ResumeJob-syncs",
        "Pending",
        "ResumeJob",
        "Running",
        pod_list=pods("worker", "Running", "Running", "Failed"),
    ),
    Row(
        "Pending-EnqueueJob-syncs",
        "Pending",
        "EnqueueJob",
        "Pending",
        pod_list=pods("worker", "Pending", "Pending", "Pending"),
    ),
    # Running: completion rules.
    Row(
        "Running-scaled-to-zero",
        "Running",
        "SyncJob",
        "Running",
        pod_list=(),
        kwargs={"tasks": (ObservedTaskSpec("worker", 0, min_available=0),), "min_available": 0},
    ),
    Row(
        "Running-minSuccess-reached",
        "Running",
        "SyncJob",
        "Completed",
        pod_list=pods("worker", "Succeeded", "Running", "Running"),
        kwargs={"min_success": 1},
    ),
    Row(
        "Running-all-done-task-minAvailable-missed",
        "Running",
        "SyncJob",
        "Failed",
        pod_list=pods("worker", "Succeeded", "Succeeded", "Failed"),
    ),
    Row(
        "Running-all-done-minSuccess-missed",
        "Running",
        "SyncJob",
        "Failed",
        pod_list=pods("worker", "Succeeded", "Failed", "Failed"),
        kwargs={
            "min_success": 2,
            "min_available": 1,
            "tasks": (ObservedTaskSpec("worker", 3, min_available=1),),
        },
    ),
    Row(
        "Running-all-done-minAvailable-succeeded",
        "Running",
        "SyncJob",
        "Completed",
        pod_list=pods("worker", "Succeeded", "Succeeded", "Failed"),
        kwargs={"min_available": 2, "tasks": (ObservedTaskSpec("worker", 3, min_available=2),)},
    ),
    Row(
        "Running-all-done-too-few-succeeded",
        "Running",
        "SyncJob",
        "Failed",
        pod_list=pods("worker", "Succeeded", "Failed", "Failed"),
        kwargs={"min_available": 2, "tasks": (ObservedTaskSpec("worker", 3, min_available=2),)},
    ),
    Row(
        "Running-job-minAvailable-below-tasks-uses-it",
        "Running",
        "SyncJob",
        "Completed",
        pod_list=pods("worker", "Succeeded", "Failed", "Failed"),
        kwargs={"min_available": 1, "tasks": (ObservedTaskSpec("worker", 3, min_available=3),)},
    ),
    Row(
        "Running-too-many-pending-back-to-Pending",
        "Running",
        "SyncJob",
        "Pending",
        pod_list=pods("worker", "Running", "Pending", "Pending"),
        kwargs={"min_available": 2, "tasks": (ObservedTaskSpec("worker", 3, min_available=2),)},
    ),
    Row(
        "Running-stays",
        "Running",
        "SyncJob",
        "Running",
        pod_list=pods("worker", "Running", "Running", "Succeeded"),
    ),
    # Restarting.
    Row(
        "Restarting-SyncJob-retries-exhausted",
        "Restarting",
        "SyncJob",
        "Failed",
        pod_list=(),
        kwargs={"retry": 3, "podgroup": None},
    ),
    Row(
        "Restarting-SyncJob-enough-replicas",
        "Restarting",
        "SyncJob",
        "Pending",
        pod_list=(),
        kwargs={"retry": 1, "podgroup": None},
    ),
    Row(
        "Restarting-SyncJob-still-terminating",
        "Restarting",
        "SyncJob",
        "Restarting",
        pod_list=(),
        kwargs={"retry": 1, "podgroup": None, "terminating": 2},
    ),
    Row(
        "Restarting-RestartPod-kills-target",
        "Restarting",
        "RestartPod",
        "Restarting",
        target=Target("pod", task="worker", pod="job-worker-0"),
        kwargs={"retry": 1},
        deleted=frozenset({"job-worker-0"}),
    ),
    Row(
        "Restarting-RestartTask-retries-exhausted",
        "Restarting",
        "RestartTask",
        "Failed",
        target=WORKER,
        kwargs={"retry": 3},
        deleted=frozenset({"job-worker-0", "job-worker-1", "job-worker-2"}),
    ),
    Row(
        "Restarting-other-kills-job",
        "Restarting",
        "AbortJob",
        "Restarting",
        kwargs={"retry": 1},
        version_delta=1,
        podgroup_deleted=True,
        deleted=frozenset({"job-worker-0", "job-worker-1", "job-worker-2"}),
    ),
    # Aborting / Aborted.
    Row(
        "Aborting-ResumeJob",
        "Aborting",
        "ResumeJob",
        "Restarting",
        retry_delta=1,
        version_delta=1,
        podgroup_deleted=True,
        deleted=frozenset({"job-worker-0"}),
    ),
    Row(
        "Aborting-pods-alive",
        "Aborting",
        "SyncJob",
        "Aborting",
        version_delta=1,
        podgroup_deleted=True,
        deleted=frozenset({"job-worker-0"}),
    ),
    Row(
        "Aborting-drained",
        "Aborting",
        "SyncJob",
        "Aborted",
        version_delta=1,
        podgroup_deleted=True,
        pod_list=pods("worker", "Succeeded", "Failed"),
    ),
    Row(
        "Aborted-ResumeJob",
        "Aborted",
        "ResumeJob",
        "Restarting",
        retry_delta=1,
        version_delta=1,
        podgroup_deleted=True,
        pod_list=pods("worker", "Succeeded"),
    ),
    Row(
        "Aborted-other",
        "Aborted",
        "RestartJob",
        "Aborted",
        version_delta=1,
        podgroup_deleted=True,
        pod_list=pods("worker", "Succeeded"),
    ),
    # Completing / Terminating drain.
    Row(
        "Completing-pods-alive",
        "Completing",
        "SyncJob",
        "Completing",
        version_delta=1,
        podgroup_deleted=True,
        deleted=frozenset({"job-worker-0"}),
    ),
    Row(
        "Completing-drained",
        "Completing",
        "SyncJob",
        "Completed",
        version_delta=1,
        podgroup_deleted=True,
        pod_list=pods("worker", "Succeeded"),
    ),
    Row(
        "Terminating-pods-alive",
        "Terminating",
        "SyncJob",
        "Terminating",
        version_delta=1,
        podgroup_deleted=True,
        deleted=frozenset({"job-worker-0"}),
    ),
    Row(
        "Terminating-drained",
        "Terminating",
        "SyncJob",
        "Terminated",
        version_delta=1,
        podgroup_deleted=True,
        pod_list=pods("worker", "Failed"),
    ),
    # Finished phases sweep leftovers and never move.
    *(
        Row(
            f"{phase}-{action}-sweeps",
            phase,
            action,
            phase,
            version_delta=1,
            podgroup_deleted=True,
            deleted=frozenset({"job-worker-0"}),
        )
        for phase in ("Completed", "Failed", "Terminated")
        for action in ("SyncJob", "RestartJob", "ResumeJob")
    ),
]


def _run(row: Row) -> tuple[Outcome, int, int]:
    kwargs = dict(row.kwargs)
    s = state(row.phase, pod_list=row.pod_list, **kwargs)
    return execute(s, row.action, row.target, NOW), s.status.retry_count, s.status.version


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_state_table_row(row: Row) -> None:
    outcome, retry, version = _run(row)
    deleted = {n for e in outcome.effects if isinstance(e, DeletePods) for n in e.names}
    assert outcome.status.phase == row.expected_phase
    assert outcome.status.retry_count == retry + row.retry_delta
    assert outcome.status.version == version + row.version_delta
    assert deleted == row.deleted
    assert any(isinstance(e, DeletePodGroup) for e in outcome.effects) == row.podgroup_deleted


def _event_for(row: Row) -> tuple[ev.JobEvent, list[Policy]]:
    """The event that makes the transition pick the row's action: a sync, a command, or a pod
    failure that the targeted restart policy turns into the action."""
    if row.action == "SyncJob":
        return ev.OutOfSync(), []
    if row.action in ("RestartTask", "RestartPod", "RestartPartition"):
        pod = row.target.pod or next(p.name for p in row.pod_list if p.task == row.target.task)
        failed = ev.PodFailed(pod, row.target.task, partition=row.target.partition, exit_code=1)
        return failed, [Policy(row.action, frozenset({"PodFailed"}))]
    return ev.CommandIssued(row.action), []


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_state_table_row_through_transition(row: Row) -> None:
    event, policies = _event_for(row)
    s = state(row.phase, pod_list=row.pod_list, policies=policies, **row.kwargs)
    result = transition(s, event, NOW)
    deleted = {n for e in result.effects if isinstance(e, DeletePods) for n in e.names}
    assert result.state.status.phase == row.expected_phase
    assert result.state.status.retry_count == s.status.retry_count + row.retry_delta
    assert result.state.status.version == s.status.version + row.version_delta
    assert deleted == row.deleted
    assert any(isinstance(e, DeletePodGroup) for e in result.effects) == row.podgroup_deleted


def test_last_retry_keeps_finished_pods_even_on_restart() -> None:
    s = state("Running", pod_list=MIXED, retry=2, max_retry=3)
    outcome = execute(s, "RestartJob", Target("task"), NOW)
    deleted = {n for e in outcome.effects if isinstance(e, DeletePods) for n in e.names}
    assert deleted == {"job-worker-0"}
    assert (outcome.status.succeeded, outcome.status.failed) == (1, 1)


def test_phase_change_stamps_time_condition_and_running_duration() -> None:
    s = state("Running", pod_list=MIXED)
    outcome = execute(s, "AbortJob", Target("task"), NOW)
    assert outcome.status.last_transition_time == NOW
    assert outcome.status.conditions[-1].status == "Aborting"
    assert outcome.status.running_duration is not None
    assert outcome.status.running_duration.total_seconds() == 3600


def test_unchanged_phase_keeps_transition_time_on_kill() -> None:
    s = state("Completed", pod_list=pods("worker", "Succeeded"))
    outcome = execute(s, "SyncJob", Target("task"), NOW)
    assert outcome.status.last_transition_time == s.status.last_transition_time


def test_kill_counts_terminating_pods() -> None:
    s = state(
        "Running",
        pod_list=(
            *pods("worker", "Running", "Running"),
            PodView("job-worker-2", "worker", 2, deleting=True),
        ),
    )
    outcome = execute(s, "TerminateJob", Target("task"), NOW)
    assert outcome.status.terminating == 3
    assert outcome.status.phase == "Terminating"


def test_deleting_job_is_left_alone() -> None:
    s = state("Running", pod_list=MIXED)
    s = type(s)(**{**s.__dict__, "deleting": True})
    outcome = execute(s, "AbortJob", Target("task"), NOW)
    assert outcome.effects == ()
    assert outcome.status == s.status


def test_restart_partition_of_unknown_partition_does_nothing() -> None:
    s = state("Running", pod_list=MIXED)
    outcome = execute(s, "RestartPartition", Target("partition", "worker", partition="9"), NOW)
    assert outcome.effects == ()
    assert outcome.status.phase == "Running"


def test_status_write_precedes_podgroup_deletion() -> None:
    result = transition(state("Running", pod_list=MIXED), ev.CommandIssued("AbortJob"), NOW)
    kinds = [type(e) for e in result.effects]
    assert kinds.index(UpdateJobStatus) < kinds.index(DeletePodGroup)
