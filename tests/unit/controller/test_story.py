"""A job's whole life through a toy shell that applies the effects to an in-memory cluster:
the effects alone must be enough to drive Volcano's happy path, a restart and a suspend."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from services.controller.core import events as ev
from services.controller.core.effects import (
    CancelTimer,
    CreatePods,
    DeleteJob,
    DeletePluginResources,
    DeletePodGroup,
    DeletePods,
    Effect,
    EnsurePluginResources,
    EnsurePodGroup,
    RecordEvent,
    ScheduleTimer,
    UpdateJobStatus,
)
from services.controller.core.jobpodgroup import build_podgroup
from services.controller.core.jobstate import DelayedAction
from services.controller.core.lifecycle import transition
from services.controller.core.observe import observe_job, pod_event
from services.controller.core.plugins import plugin_objects
from services.controller.core.pods import build_pod

from .manifests import job, task

pytestmark = pytest.mark.unit
START = datetime(2026, 1, 1, 12, tzinfo=UTC)


@dataclass
class Cluster:
    job: dict[str, Any]
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    podgroup: dict[str, Any] | None = None
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[RecordEvent] = field(default_factory=list)
    timers: tuple[DelayedAction, ...] = ()
    scheduled: dict[str, datetime] = field(default_factory=dict)
    deleted: bool = False
    now: datetime = START

    def send(self, event: ev.JobEvent) -> None:
        state = observe_job(self.job, self.pods.values(), self.podgroup, self.timers)
        result = transition(state, event, self.now)
        self.timers = result.state.timers
        for effect in result.effects:
            self.apply(effect)

    def apply(self, effect: Effect) -> None:
        if isinstance(effect, CreatePods):
            for ref in effect.pods:
                pod = build_pod(
                    self.job,
                    ref.task_index,
                    ref.pod_index,
                    job_version=effect.job_version,
                    retry_count=effect.retry_count,
                )
                pod["metadata"]["uid"] = f"{ref.name}-v{effect.job_version}"
                pod["status"] = {"phase": "Pending"}
                self.pods.setdefault(ref.name, pod)
        elif isinstance(effect, DeletePods):
            for name in effect.names:
                self.pods.pop(name, None)
        elif isinstance(effect, EnsurePodGroup):
            if self.podgroup is None:
                self.podgroup = build_podgroup(self.job)
        elif isinstance(effect, DeletePodGroup):
            self.podgroup = None
        elif isinstance(effect, EnsurePluginResources):
            for obj in plugin_objects(self.job, plugins=effect.plugins):
                self.objects.setdefault(f"{obj['kind']}/{obj['metadata']['name']}", obj)
        elif isinstance(effect, DeletePluginResources):
            self.objects.clear()
        elif isinstance(effect, UpdateJobStatus):
            self.job["status"] = effect.status
        elif isinstance(effect, RecordEvent):
            self.events.append(effect)
        elif isinstance(effect, ScheduleTimer):
            self.scheduled[effect.key] = effect.at
        elif isinstance(effect, CancelTimer):
            self.scheduled.pop(effect.key, None)
        elif isinstance(effect, DeleteJob):
            self.deleted = True

    # -- what the scheduler and kubelets would do --
    def admit(self) -> None:
        assert self.podgroup is not None
        self.podgroup["status"] = {"phase": "Inqueue"}
        self.send(ev.PodGroupPhaseChanged("Inqueue"))

    def set_pod(self, name: str, phase: str, exit_code: int = 0) -> None:
        old = copy.deepcopy(self.pods[name])
        self.pods[name]["status"] = {
            "phase": phase,
            "containerStatuses": [
                {
                    "ready": phase == "Running",
                    "restartCount": 0,
                    "state": {"terminated": {"exitCode": exit_code}} if phase == "Failed" else {},
                }
            ],
        }
        state = observe_job(self.job, self.pods.values(), self.podgroup, self.timers)
        self.send(pod_event(old, self.pods[name], state))

    @property
    def phase(self) -> str:
        return str(self.job.get("status", {}).get("state", {}).get("phase", ""))


def _cluster(**spec: Any) -> Cluster:
    return Cluster(job(task("master", 1), task("worker", 2), plugins={"svc": [], "env": []}, **spec))


def test_happy_path_with_ttl() -> None:
    c = _cluster(ttlSecondsAfterFinished=60)
    c.send(ev.OutOfSync())
    assert c.phase == "Pending"
    assert c.podgroup is not None
    assert set(c.objects) == {"ConfigMap/tf-svc", "Service/tf", "NetworkPolicy/tf"}
    assert c.pods == {}
    c.admit()
    assert sorted(c.pods) == ["tf-master-0", "tf-worker-0", "tf-worker-1"]
    for name in sorted(c.pods):
        c.set_pod(name, "Running")
    assert c.phase == "Running"
    for name in sorted(c.pods):
        c.set_pod(name, "Succeeded")
    assert c.phase == "Completed"
    assert c.job["status"]["succeeded"] == 3
    c.send(ev.OutOfSync())  # the phase change comes back as a Job update
    assert c.podgroup is None
    assert c.objects == {}
    assert len(c.pods) == 3  # finished pods are kept
    c.now += timedelta(seconds=61)
    c.send(ev.TimerFired("ttl-after-finished"))
    assert c.deleted


def test_failed_pod_restarts_the_job_until_retries_run_out() -> None:
    c = _cluster(maxRetry=2, policies=[{"event": "PodFailed", "action": "RestartJob"}])
    c.send(ev.OutOfSync())
    for attempt in (1, 2):
        c.admit()
        for name in sorted(c.pods):
            c.set_pod(name, "Running")
        c.set_pod("tf-worker-1", "Failed", exit_code=1)
        assert c.phase == "Restarting"
        assert c.job["status"]["retryCount"] == attempt
        c.send(ev.OutOfSync())
    assert c.phase == "Failed"
    assert sum(1 for e in c.events if e.message == "Start to execute action RestartJob ") == 2


def test_pending_timeout_then_pod_runs_cancels_the_restart() -> None:
    c = _cluster(policies=[{"event": "PodPending", "action": "RestartJob", "timeout": "10m"}])
    c.send(ev.OutOfSync())
    c.admit()
    state = observe_job(c.job, c.pods.values(), c.podgroup, c.timers)
    c.send(pod_event(None, c.pods["tf-worker-0"], state))
    assert "tf-worker-0" in c.scheduled
    c.set_pod("tf-worker-0", "Running")
    assert "tf-worker-0" not in c.scheduled
    assert c.timers == ()


def test_suspend_and_resume_by_command() -> None:
    c = _cluster()
    c.send(ev.OutOfSync())
    c.admit()
    for name in sorted(c.pods):
        c.set_pod(name, "Running")
    c.send(ev.CommandIssued("AbortJob"))
    assert c.phase == "Aborting"
    assert c.pods == {}
    c.send(ev.OutOfSync())
    assert c.phase == "Aborted"
    c.send(ev.CommandIssued("ResumeJob"))
    c.send(ev.OutOfSync())
    assert c.phase == "Pending"
    c.admit()
    versions = {p["metadata"]["annotations"]["volcano.sh/job-version"] for p in c.pods.values()}
    assert versions == {str(c.job["status"]["version"])}


def test_master_completion_completes_the_job_and_sweeps_workers() -> None:
    c = _cluster(policies=[{"event": "TaskCompleted", "action": "CompleteJob"}])
    c.send(ev.OutOfSync())
    c.admit()
    for name in sorted(c.pods):
        c.set_pod(name, "Running")
    c.set_pod("tf-master-0", "Succeeded")
    assert c.phase == "Completing"
    assert sorted(c.pods) == ["tf-master-0"]  # running workers were killed, the master kept
    c.send(ev.OutOfSync())
    assert c.phase == "Completed"


def test_exit_code_policy_terminates_instead_of_restarting() -> None:
    c = _cluster(
        policies=[{"exitCode": 42, "action": "TerminateJob"}, {"event": "PodFailed", "action": "RestartJob"}]
    )
    c.send(ev.OutOfSync())
    c.admit()
    for name in sorted(c.pods):
        c.set_pod(name, "Running")
    c.set_pod("tf-worker-0", "Failed", exit_code=42)
    assert c.phase == "Terminating"
    c.send(ev.OutOfSync())
    assert c.phase == "Terminated"
    assert c.job["status"].get("retryCount", 0) == 0
