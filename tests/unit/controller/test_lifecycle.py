"""The job lifecycle on small states: creation, pods, scaling, dependsOn, TTL, commands."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.controller.core import events as ev
from services.controller.core.effects import (
    CreatePods,
    DeleteJob,
    DeletePluginResources,
    DeletePods,
    DesiredPod,
    EnsurePluginResources,
    EnsurePodGroup,
    EnsurePVCs,
    RecordEvent,
    ScheduleTimer,
    UpdateJobStatus,
)
from services.controller.core.jobstate import (
    ObservedCondition,
    ObservedDependsOn,
    ObservedTaskSpec,
    PodGroupView,
    PodView,
    Volume,
)
from services.controller.core.lifecycle import TTL_TIMER_KEY, transition, ttl_expiry
from services.controller.core.policies import Policy

from .builders import CREATED, NOW, pods, state

pytestmark = pytest.mark.unit


def _created(effects: tuple[object, ...]) -> set[str]:
    return {p.name for e in effects if isinstance(e, CreatePods) for p in e.pods}


def _deleted(effects: tuple[object, ...]) -> set[str]:
    return {n for e in effects if isinstance(e, DeletePods) for n in e.names}


def test_new_job_becomes_pending_with_plugins_volumes_and_podgroup_but_no_pods() -> None:
    s = replace(
        state("", podgroup=None, plugins=("env", "ssh", "svc")),
        volumes=(Volume("/data", "claim-a"), Volume("/scratch", "", True)),
    )
    result = transition(s, ev.OutOfSync(), NOW)
    status = result.state.status
    assert status.phase == "Pending"
    assert status.conditions == (ObservedCondition("Pending", NOW),)
    assert status.controlled_resources == {
        "plugin-env": "env",
        "plugin-ssh": "ssh",
        "plugin-svc": "svc",
        "volume-pvc-claim-a": "claim-a",
    }
    assert EnsurePluginResources(("env", "ssh", "svc")) in result.effects
    assert EnsurePVCs(("claim-a",), 1) in result.effects
    assert EnsurePodGroup("job-uid-1") in result.effects
    assert not _created(result.effects)
    written = next(e for e in result.effects if isinstance(e, UpdateJobStatus)).status
    assert written["state"] == {"phase": "Pending", "lastTransitionTime": "2026-01-01T12:00:00Z"}
    assert written["minAvailable"] == 3


def test_plugins_already_set_up_are_not_set_up_again() -> None:
    s = state("Pending", podgroup="Pending", plugins=("svc",), controlled={"plugin-svc": "svc"})
    result = transition(s, ev.OutOfSync(), NOW)
    assert not any(isinstance(e, EnsurePluginResources) for e in result.effects)


@pytest.mark.parametrize("pg_phase", [None, "", "Pending"], ids=["absent", "unset", "Pending"])
def test_no_pods_before_the_scheduler_admits_the_podgroup(pg_phase: str | None) -> None:
    s = state("Pending", podgroup=pg_phase)
    assert not _created(transition(s, ev.OutOfSync(), NOW).effects)


def test_admitted_podgroup_creates_every_missing_pod_stamped_with_version() -> None:
    s = state(
        "Pending",
        podgroup="Inqueue",
        version=2,
        retry=1,
        pod_list=pods("worker", "Pending", version=2),
    )
    result = transition(s, ev.PodGroupPhaseChanged("Inqueue"), NOW)
    create = next(e for e in result.effects if isinstance(e, CreatePods))
    assert create == CreatePods(
        (DesiredPod(0, 1, "job-worker-1", "worker"), DesiredPod(0, 2, "job-worker-2", "worker")), 2, 1
    )
    assert result.state.status.pending == 3


def test_scale_down_deletes_surplus_pods_and_counts_them_terminating() -> None:
    s = state(
        "Running",
        tasks=(ObservedTaskSpec("worker", 2, 2),),
        pod_list=pods("worker", "Running", "Running", "Running"),
    )
    result = transition(s, ev.JobUpdated(), NOW)
    assert _deleted(result.effects) == {"job-worker-2"}
    assert result.state.status.terminating == 1
    assert result.state.status.running == 2


def test_scale_up_creates_new_pods_and_refreshes_hosts() -> None:
    s = state(
        "Running",
        tasks=(ObservedTaskSpec("worker", 4, 3),),
        plugins=("svc",),
        pod_list=pods("worker", "Running", "Running", "Running"),
    )
    result = transition(s, ev.JobUpdated(), NOW)
    assert _created(result.effects) == {"job-worker-3"}
    assert EnsurePluginResources(("svc",), refresh=True) in result.effects


def test_out_of_sync_pod_is_deleted_and_recreated_later() -> None:
    marked = PodView("job-worker-0", "worker", 0, phase="Failed", out_of_sync=True)
    s = state("Running", pod_list=(marked, *pods("worker", "Running", "Running")[1:]))
    result = transition(s, ev.OutOfSync(), NOW)
    assert _deleted(result.effects) == {"job-worker-0"}


def test_terminating_pod_is_neither_recreated_nor_counted_by_phase() -> None:
    s = state(
        "Running",
        pod_list=(
            PodView("job-worker-0", "worker", 0, phase="Running", deleting=True),
            *pods("worker", "Running", "Running", "Running")[1:],
        ),
    )
    result = transition(s, ev.OutOfSync(), NOW)
    assert not _created(result.effects)
    assert (result.state.status.terminating, result.state.status.running) == (1, 2)


DEPENDS = (ObservedTaskSpec("ps", 2, 2),)


@pytest.mark.parametrize(
    ("depends_on", "ps_pods", "extra_task_pods", "creates_worker"),
    [
        (ObservedDependsOn(("ps",)), ("Running", "Pending"), (), False),
        (ObservedDependsOn(("ps",)), ("Running", "Succeeded"), (), True),
        (ObservedDependsOn(("ps", "db")), ("Running", "Running"), ("Pending",), False),
        (ObservedDependsOn(("ps", "db"), "any"), ("Running", "Running"), ("Pending",), True),
        (ObservedDependsOn(("ps", "db"), "any"), ("Pending", "Pending"), ("Pending",), False),
    ],
    ids=[
        "dependency-not-ready",
        "running-and-succeeded-count",
        "all-needs-every-one",
        "any-needs-one",
        "any-none-ready",
    ],
)
def test_depends_on_gates_pod_creation(
    depends_on: ObservedDependsOn,
    ps_pods: tuple[str, ...],
    extra_task_pods: tuple[str, ...],
    creates_worker: bool,
) -> None:
    ready = tuple(replace(p, containers_ready=True) for p in pods("ps", *ps_pods))
    s = state(
        "Pending",
        podgroup="Inqueue",
        tasks=(
            *DEPENDS,
            ObservedTaskSpec("db", 1, 1),
            ObservedTaskSpec("worker", 1, 1, depends_on=depends_on),
        ),
        pod_list=(*ready, *pods("db", *extra_task_pods)),
    )
    assert ("job-worker-0" in _created(transition(s, ev.OutOfSync(), NOW).effects)) == creates_worker


def test_running_pod_with_unready_containers_does_not_satisfy_dependents() -> None:
    s = state(
        "Pending",
        podgroup="Inqueue",
        tasks=(
            ObservedTaskSpec("ps", 1, 1),
            ObservedTaskSpec("worker", 1, 1, depends_on=ObservedDependsOn(("ps",))),
        ),
        pod_list=pods("ps", "Running"),
    )
    assert "job-worker-0" not in _created(transition(s, ev.OutOfSync(), NOW).effects)


def test_podgroup_pending_event_reports_the_unschedulable_condition() -> None:
    s = replace(
        state("Pending", podgroup="Pending"),
        podgroup=PodGroupView("job-uid-1", "Pending", "Unschedulable", "3/3 tasks in gang unschedulable"),
    )
    result = transition(s, ev.OutOfSync(), NOW)
    assert (
        RecordEvent(
            "Warning",
            "PodGroupPending",
            "PodGroup ns:job unschedulable, reason: 3/3 tasks in gang unschedulable",
        )
        in result.effects
    )


def test_kill_deletes_plugin_objects_and_forgets_plugins() -> None:
    s = state(
        "Running",
        plugins=("env", "svc"),
        pod_list=pods("worker", "Running"),
        controlled={"plugin-env": "env", "plugin-svc": "svc", "volume-pvc-a": "a"},
    )
    result = transition(s, ev.CommandIssued("AbortJob"), NOW)
    assert DeletePluginResources(("svc",)) in result.effects
    assert result.state.status.controlled_resources == {"volume-pvc-a": "a"}


def test_command_is_recorded_then_executed() -> None:
    s = state("Running", pod_list=pods("worker", "Running", "Running", "Running"))
    result = transition(s, ev.CommandIssued("AbortJob"), NOW)
    assert result.effects[:2] == (
        RecordEvent(
            "Normal",
            "CommandIssued",
            "Start to execute command AbortJob, and clean it up to make sure executed not more than once.",
        ),
        RecordEvent("Normal", "ExecuteAction", "Start to execute action AbortJob "),
    )
    assert result.state.status.phase == "Aborting"


def test_suspend_then_resume_goes_back_through_restarting_to_pending() -> None:
    s = state("Running", pod_list=pods("worker", "Running", "Running", "Running"))
    aborting = transition(s, ev.CommandIssued("AbortJob"), NOW).state
    gone = replace(aborting, pods=(), podgroup=None)
    aborted = transition(gone, ev.OutOfSync(), NOW).state
    assert aborted.status.phase == "Aborted"
    restarting = transition(aborted, ev.CommandIssued("ResumeJob"), NOW).state
    assert (restarting.status.phase, restarting.status.retry_count) == ("Restarting", 1)
    pending = transition(restarting, ev.OutOfSync(), NOW).state
    assert pending.status.phase == "Pending"


def test_retries_exhausted_end_in_failed() -> None:
    s = state(
        "Running",
        max_retry=1,
        policies=[Policy("RestartJob", frozenset({"PodFailed"}))],
        pod_list=pods("worker", "Failed", "Running", "Running"),
    )
    restarting = transition(s, ev.PodFailed("job-worker-0", "worker", exit_code=1), NOW).state
    assert restarting.status.retry_count == 1
    failed = transition(replace(restarting, pods=(), podgroup=None), ev.OutOfSync(), NOW).state
    assert failed.status.phase == "Failed"


def test_retry_limit_reached_terminates_the_job() -> None:
    s = state("Running", pod_list=pods("worker", "Running"))
    result = transition(s, ev.RetryLimitReached("RestartJob"), NOW)
    assert (
        RecordEvent("Normal", "ExecuteAction", "Job failed on action RestartJob for retry limit reached")
        in result.effects
    )
    assert result.state.status.phase == "Terminating"


def test_pod_creation_failure_is_reported() -> None:
    result = transition(state(), ev.PodCreationFailed(("quota exceeded",)), NOW)
    assert result.effects == (
        RecordEvent("Warning", "FailedCreate", "Error creating pods: [quota exceeded]"),
    )


def test_ttl_timer_is_scheduled_when_the_job_finishes() -> None:
    s = state("Running", ttl=60, pod_list=pods("worker", "Succeeded", "Succeeded", "Succeeded"))
    result = transition(s, ev.OutOfSync(), NOW)
    assert result.state.status.phase == "Completed"
    assert ScheduleTimer(TTL_TIMER_KEY, NOW + timedelta(seconds=60), "DeleteJob") in result.effects
    assert ttl_expiry(result.state) == NOW + timedelta(seconds=60)


@pytest.mark.parametrize(
    ("phase", "after", "deletes"),
    [
        ("Completed", 60, True),
        ("Failed", 61, True),
        ("Terminated", 59, False),
        ("Aborted", 3600, False),
        ("Running", 3600, False),
    ],
    ids=["completed-due", "failed-overdue", "terminated-not-yet", "aborted-never", "running-never"],
)
def test_ttl_deletes_finished_jobs_when_due(phase: str, after: int, deletes: bool) -> None:
    s = state(phase, ttl=60)
    finished = replace(s, status=replace(s.status, last_transition_time=NOW))
    result = transition(finished, ev.TimerFired(TTL_TIMER_KEY), NOW + timedelta(seconds=after))
    assert (DeleteJob("uid-1", "ttlSecondsAfterFinished") in result.effects) == deletes


def test_status_document_matches_volcano_shape() -> None:
    s = state("Running", pod_list=pods("worker", "Running", "Running", "Succeeded"))
    result = transition(s, ev.PodSucceeded("job-worker-2", "worker"), NOW)
    written = next(e for e in result.effects if isinstance(e, UpdateJobStatus)).status
    assert written == {
        "state": {"phase": "Running", "lastTransitionTime": "2026-01-01T12:00:00Z"},
        "minAvailable": 3,
        "running": 2,
        "succeeded": 1,
        "taskStatusCount": {"worker": {"phase": {"Running": 2, "Succeeded": 1}}},
        "conditions": [{"status": "Running", "lastTransitionTime": "2026-01-01T12:00:00Z"}],
    }


def test_reentered_phase_moves_its_condition_to_the_end() -> None:
    s = state(
        "Running",
        pod_list=pods("worker", "Running", "Pending", "Pending"),
        min_available=2,
        tasks=(ObservedTaskSpec("worker", 3, 2),),
    )
    s = replace(
        s,
        status=replace(
            s.status,
            conditions=(ObservedCondition("Pending", CREATED), ObservedCondition("Running", CREATED)),
        ),
    )
    result = transition(s, ev.OutOfSync(), NOW)
    assert [c.status for c in result.state.status.conditions] == ["Running", "Pending"]


def test_nothing_written_when_nothing_changed() -> None:
    s = state("Running", pod_list=pods("worker", "Running", "Running", "Running"))
    first = transition(s, ev.OutOfSync(), NOW).state
    again = transition(first, ev.OutOfSync(), NOW + timedelta(seconds=5))
    assert not any(isinstance(e, UpdateJobStatus) for e in again.effects)


PHASES = [
    "Pending",
    "Running",
    "Restarting",
    "Aborting",
    "Aborted",
    "Completing",
    "Completed",
    "Terminating",
    "Terminated",
    "Failed",
]
EVENTS = st.one_of(
    st.builds(
        ev.CommandIssued,
        st.sampled_from(["AbortJob", "ResumeJob", "RestartJob", "CompleteJob", "TerminateJob"]),
    ),
    st.builds(ev.PodFailed, st.just("job-worker-0"), st.just("worker"), exit_code=st.integers(0, 3)),
    st.builds(ev.PodEvicted, st.just("job-worker-1"), st.just("worker")),
    st.builds(ev.PodRunning, st.just("job-worker-2"), st.just("worker")),
    st.just(ev.OutOfSync()),
    st.builds(ev.PodGroupPhaseChanged, st.sampled_from(["Inqueue", "Running", "Unknown"])),
)
POD_PHASES = st.sampled_from(["Pending", "Running", "Succeeded", "Failed"])


@settings(max_examples=150, deadline=None)
@given(
    phase=st.sampled_from(PHASES),
    pod_phases=st.lists(POD_PHASES, min_size=0, max_size=3),
    event_list=st.lists(EVENTS, min_size=1, max_size=6),
    retry=st.integers(0, 3),
)
def test_lifecycle_invariants(
    phase: str, pod_phases: list[str], event_list: list[ev.JobEvent], retry: int
) -> None:
    """Finished jobs stay finished; version and retries only grow, retries by one at a time;
    counters are never negative."""
    policies = [
        Policy("RestartJob", frozenset({"PodFailed"})),
        Policy("RestartTask", frozenset({"PodEvicted"})),
    ]
    s = state(phase, pod_list=pods("worker", *pod_phases), retry=retry, policies=policies)
    for event in event_list:
        result = transition(s, event, NOW)
        new = result.state.status
        if s.status.phase in ("Completed", "Failed", "Terminated"):
            assert new.phase == s.status.phase
        assert new.version >= s.status.version
        assert new.retry_count - s.status.retry_count in (0, 1)
        assert min(new.pending, new.running, new.succeeded, new.failed, new.terminating) >= 0
        s = result.state
