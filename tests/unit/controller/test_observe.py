"""From Kubernetes JSON to lifecycle input: job state and the events watched changes raise."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from services.controller.core import events as ev
from services.controller.core.lifecycle import transition
from services.controller.core.observe import (
    job_event,
    missed_pod_events,
    observe_job,
    pod_event,
    podgroup_event,
)
from services.controller.core.pods import build_pod
from services.controller.core.status import job_status

from .manifests import job, task

pytestmark = pytest.mark.unit
NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def _job() -> dict[str, Any]:
    j = job(
        task("worker", 2, maxRetry=2),
        policies=[{"event": "PodFailed", "action": "RestartJob"}],
        ttlSecondsAfterFinished=30,
        minSuccess=1,
    )
    j["spec"]["tasks"][0]["maxRetry"] = 2
    j["spec"]["tasks"][0]["dependsOn"] = {"name": ["ps"], "iteration": "any"}
    j["status"] = {
        "state": {"phase": "Running", "lastTransitionTime": "2026-01-01T11:30:00Z"},
        "version": 1,
        "retryCount": 1,
        "minAvailable": 2,
        "runningDuration": "30m0s",
        "controlledResources": {"plugin-env": "env"},
        "conditions": [{"status": "Running", "lastTransitionTime": "2026-01-01T11:30:00Z"}],
    }
    return j


def _pod(j: dict[str, Any], index: int, phase: str, **status: Any) -> dict[str, Any]:
    pod = build_pod(j, 0, index)
    pod["metadata"]["uid"] = f"pod-{index}"
    pod["status"] = {"phase": phase, **status}
    return pod


def test_observe_reads_spec_status_pods_and_podgroup() -> None:
    j = _job()
    stray = _pod(j, 1, "Running")
    stray["metadata"]["ownerReferences"][0]["uid"] = "another-job"
    s = observe_job(
        j, [_pod(j, 0, "Running"), stray], {"metadata": {"name": "tf-u-123"}, "status": {"phase": "Running"}}
    )
    assert (s.name, s.namespace, s.uid, s.queue) == ("tf", "team-a", "u-123", "research")
    assert (s.min_available, s.min_success, s.ttl_seconds_after_finished) == (2, 1, 30)
    assert s.tasks[0].max_retry == 2
    assert s.tasks[0].depends_on is not None
    assert s.tasks[0].depends_on.iteration == "any"
    assert s.policies[0].action == "RestartJob"
    assert (s.status.phase, s.status.version, s.status.retry_count) == ("Running", 1, 1)
    assert s.status.running_duration == timedelta(minutes=30)
    assert [p.name for p in s.pods] == ["tf-worker-0"]
    assert s.pods[0].job_version == 1
    assert s.podgroup is not None
    assert s.podgroup.phase == "Running"


def test_status_round_trips() -> None:
    j = _job()
    assert job_status(observe_job(j)) == j["status"]


def test_podgroup_view_reports_newest_true_condition_unless_scheduled() -> None:
    pg = {
        "metadata": {"name": "tf-u-123"},
        "status": {
            "phase": "Inqueue",
            "conditions": [
                {"type": "Scheduled", "status": "True", "lastTransitionTime": "2026-01-01T10:00:00Z"},
                {
                    "type": "Unschedulable",
                    "status": "True",
                    "message": "1/2 tasks in gang unschedulable",
                    "lastTransitionTime": "2026-01-01T11:00:00Z",
                },
            ],
        },
    }
    s = observe_job(_job(), [], pg)
    assert s.podgroup is not None
    assert (s.podgroup.unready_type, s.podgroup.unready_message) == (
        "Unschedulable",
        "1/2 tasks in gang unschedulable",
    )


def _event(
    old: dict[str, Any] | None, new: dict[str, Any] | None, others: list[dict[str, Any]] | None = None
) -> ev.JobEvent:
    j = _job()
    current = [p for p in [new, *(others or [])] if p is not None]
    return pod_event(old, new, observe_job(j, current))


def test_pod_event_classification() -> None:
    j = _job()
    pending, running = _pod(j, 0, "Pending"), _pod(j, 0, "Running")
    failed = _pod(
        j,
        0,
        "Failed",
        containerStatuses=[{"ready": False, "restartCount": 0, "state": {"terminated": {"exitCode": 137}}}],
    )
    assert isinstance(_event(None, pending), ev.PodPending)
    assert isinstance(_event(pending, running), ev.PodRunning)
    assert _event(running, failed) == ev.PodFailed(
        "tf-worker-0", "worker", "pod-0", 1, "u-123", exit_code=137
    )
    assert isinstance(_event(failed, failed), ev.OutOfSync)
    assert isinstance(_event(running, None), ev.PodEvicted)


def test_succeeded_pod_completes_its_task_only_when_last() -> None:
    j = _job()
    done0, done1 = _pod(j, 0, "Succeeded"), _pod(j, 1, "Succeeded")
    assert isinstance(_event(_pod(j, 0, "Running"), done0, [_pod(j, 1, "Running")]), ev.PodSucceeded)
    assert isinstance(_event(_pod(j, 1, "Running"), done1, [done0]), ev.TaskCompleted)


def test_container_restarts_beyond_task_max_retry_fail_the_task() -> None:
    j = _job()
    restarted = _pod(j, 0, "Running", containerStatuses=[{"ready": True, "restartCount": 2}])
    again = copy.deepcopy(restarted)
    assert isinstance(_event(restarted, again), ev.TaskFailed)
    fine = _pod(j, 0, "Running", containerStatuses=[{"ready": True, "restartCount": 1}])
    assert isinstance(_event(fine, copy.deepcopy(fine)), ev.OutOfSync)


def test_pods_we_marked_out_of_sync_raise_only_out_of_sync() -> None:
    j = _job()
    marked = _pod(j, 0, "Failed")
    marked["metadata"]["annotations"]["volcano.sh/controller-out-of-sync"] = "true"
    assert isinstance(_event(_pod(j, 0, "Running"), marked), ev.OutOfSync)
    assert isinstance(_event(marked, None), ev.OutOfSync)


def test_job_and_podgroup_change_events() -> None:
    j = _job()
    assert isinstance(job_event(None, j), ev.OutOfSync)
    status_only = copy.deepcopy(j)
    status_only["status"]["running"] = 2
    assert job_event(j, status_only) is None
    scaled = copy.deepcopy(j)
    scaled["spec"]["tasks"][0]["replicas"] = 3
    assert isinstance(job_event(j, scaled), ev.JobUpdated)
    rephased = copy.deepcopy(j)
    rephased["status"]["state"]["phase"] = "Completed"
    assert isinstance(job_event(j, rephased), ev.OutOfSync)
    old_pg = {"status": {"phase": "Pending"}}
    assert podgroup_event(old_pg, {"status": {"phase": "Inqueue"}}) == ev.PodGroupPhaseChanged("Inqueue")
    assert podgroup_event(old_pg, {"status": {"phase": "Pending"}}) is None


def test_observed_failure_restarts_the_job_through_its_policy() -> None:
    j = _job()
    running, failed = _pod(j, 0, "Running"), _pod(j, 0, "Failed")
    s = observe_job(
        j, [failed, _pod(j, 1, "Running")], {"metadata": {"name": "tf-u-123"}, "status": {"phase": "Running"}}
    )
    result = transition(s, pod_event(running, failed, s), NOW)
    assert result.state.status.phase == "Restarting"
    assert result.state.status.retry_count == 2


# ---- what pods did while the controller was away ------------------------------------------------


def _terminated(code: int) -> dict[str, Any]:
    return {"containerStatuses": [{"name": "main", "state": {"terminated": {"exitCode": code}}}]}


def test_a_pod_that_failed_while_the_controller_was_away_raises_pod_failed_at_start() -> None:
    j = _job()
    listed = [_pod(j, 0, "Failed", **_terminated(3)), _pod(j, 1, "Running")]
    missed = missed_pod_events(listed, observe_job(j, listed))
    assert missed == [
        ev.PodFailed(
            pod="tf-worker-0", task="worker", pod_uid="pod-0", job_version=1, job_uid="u-123", exit_code=3
        )
    ]


def test_a_failure_already_handled_by_a_restart_is_not_raised_again() -> None:
    j = _job()
    listed = [_pod(j, 0, "Failed"), _pod(j, 1, "Running")]
    (failed,) = missed_pod_events(listed, observe_job(j, listed))
    restarted = transition(observe_job(j, listed), failed, NOW)
    assert restarted.state.status.phase == "Restarting"
    assert missed_pod_events(listed, restarted.state) == []
    j["status"]["version"] = 2  # Pending again after the restart, with the old pods still listed
    j["status"]["state"]["phase"] = "Pending"
    assert missed_pod_events(listed, observe_job(j, listed)) == []


@pytest.mark.parametrize("phase", ["Restarting", "Aborted", "Completing", "Failed", ""])
def test_jobs_outside_pending_and_running_raise_nothing_at_start(phase: str) -> None:
    j = _job()
    j["status"]["state"]["phase"] = phase
    listed = [_pod(j, 0, "Failed"), _pod(j, 1, "Failed")]
    assert missed_pod_events(listed, observe_job(j, listed)) == []


def test_a_task_completed_while_the_controller_was_away_raises_task_completed_once() -> None:
    j = _job()
    listed = [_pod(j, 0, "Succeeded"), _pod(j, 1, "Succeeded")]
    missed = missed_pod_events(listed, observe_job(j, listed))
    assert [type(e) for e in missed] == [ev.TaskCompleted]
    partly = [_pod(j, 0, "Succeeded"), _pod(j, 1, "Running")]
    assert missed_pod_events(partly, observe_job(j, partly)) == []


def _counted(j: dict[str, Any], **phases: int) -> None:
    j["status"]["taskStatusCount"] = {"worker": {"phase": phases}}


def test_a_pod_deleted_while_the_controller_was_away_raises_pod_evicted_at_start() -> None:
    j = _job()
    _counted(j, Running=2)  # the last status saw both pods
    listed = [_pod(j, 0, "Running")]
    assert missed_pod_events(listed, observe_job(j, listed)) == [
        ev.PodEvicted(pod="tf-worker-1", task="worker", job_version=1, job_uid="u-123")
    ]


def test_a_pod_the_last_status_never_counted_is_not_taken_for_evicted() -> None:
    j = _job()
    _counted(j, Running=1)  # scaled up, or not created yet: SyncJob creates it
    listed = [_pod(j, 0, "Running")]
    assert missed_pod_events(listed, observe_job(j, listed)) == []
    j["status"]["terminating"] = 1
    _counted(j, Running=2)  # a kill under way deletes pods itself
    assert missed_pod_events(listed, observe_job(j, listed)) == []
