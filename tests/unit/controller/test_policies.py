"""Every rule of Volcano's policy resolution and of its delayed (timeout) actions."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from services.controller.core import events as ev
from services.controller.core.effects import CancelTimer, RecordEvent, ScheduleTimer
from services.controller.core.jobstate import DelayedAction, ObservedJob, ObservedTaskSpec
from services.controller.core.lifecycle import only_syncs, transition
from services.controller.core.policies import (
    Policy,
    ResolvedAction,
    format_go_duration,
    parse_go_duration,
    resolve_policy,
)

from .builders import NOW, pods, state

pytestmark = pytest.mark.unit

RESTART = Policy("RestartJob", frozenset({"PodFailed"}))
ABORT_ANY = Policy("AbortJob", frozenset({"*"}))
EXIT_3 = Policy("TerminateJob", exit_code=3)
PENDING_NO_TIMEOUT = Policy("RestartPod", frozenset({"PodPending"}))
PENDING_TIMEOUT = Policy("RestartPod", frozenset({"PodPending"}), timeout=timedelta(minutes=5))
EVICT_OR_FAIL = Policy("RestartTask", frozenset({"PodEvicted", "PodFailed"}))

CASES = [
    (
        "command-action-wins",
        {"commanded_action": "AbortJob", "event": "PodFailed", "job_policies": [RESTART]},
        ResolvedAction("AbortJob"),
    ),
    (
        "internal-OutOfSync-syncs",
        {"event": "OutOfSync", "job_policies": [ABORT_ANY]},
        ResolvedAction("SyncJob"),
    ),
    (
        "internal-PodRunning-syncs",
        {"event": "PodRunning", "job_policies": [ABORT_ANY]},
        ResolvedAction("SyncJob"),
    ),
    (
        "internal-CommandIssued-syncs",
        {"event": "CommandIssued", "job_policies": [ABORT_ANY]},
        ResolvedAction("SyncJob"),
    ),
    (
        "stale-request-syncs",
        {"event": "PodFailed", "stale": True, "job_policies": [RESTART]},
        ResolvedAction("SyncJob"),
    ),
    (
        "task-before-job",
        {"event": "PodFailed", "task_policies": [EVICT_OR_FAIL], "job_policies": [RESTART]},
        ResolvedAction("RestartTask"),
    ),
    (
        "first-match-wins",
        {"event": "PodFailed", "job_policies": [RESTART, ABORT_ANY]},
        ResolvedAction("RestartJob"),
    ),
    (
        "events-list",
        {"event": "PodEvicted", "job_policies": [EVICT_OR_FAIL]},
        ResolvedAction("RestartTask"),
    ),
    (
        "star-matches-any",
        {"event": "TaskCompleted", "job_policies": [ABORT_ANY]},
        ResolvedAction("AbortJob"),
    ),
    (
        "pending-needs-timeout",
        {"event": "PodPending", "job_policies": [PENDING_NO_TIMEOUT]},
        ResolvedAction("SyncJob"),
    ),
    (
        "star-does-not-catch-pending-without-timeout",
        {"event": "PodPending", "job_policies": [ABORT_ANY]},
        ResolvedAction("SyncJob"),
    ),
    (
        "pending-with-timeout-delays",
        {"event": "PodPending", "job_policies": [PENDING_TIMEOUT]},
        ResolvedAction("RestartPod", timedelta(minutes=5)),
    ),
    (
        "exit-code-matches",
        {"event": "PodFailed", "exit_code": 3, "job_policies": [EXIT_3]},
        ResolvedAction("TerminateJob"),
    ),
    (
        "exit-code-mismatch-falls-through",
        {
            "event": "PodFailed",
            "exit_code": 1,
            "task_policies": [EXIT_3],
            "job_policies": [RESTART],
        },
        ResolvedAction("RestartJob"),
    ),
    ("no-match-syncs", {"event": "PodEvicted", "job_policies": [RESTART]}, ResolvedAction("SyncJob")),
    (
        "unknown-event",
        {"event": "Unknown", "job_policies": [Policy("RestartJob", frozenset({"Unknown"}))]},
        ResolvedAction("RestartJob"),
    ),
]


@pytest.mark.parametrize(("kwargs", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_resolve_policy(kwargs: dict[str, Any], expected: ResolvedAction) -> None:
    defaults: dict[str, Any] = {"exit_code": 0, "task_policies": [], "job_policies": []}
    assert resolve_policy(**{**defaults, **kwargs}) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"action": "RestartJob", "event": "PodFailed"}, RESTART),
        ({"action": "RestartTask", "events": ["PodEvicted", "PodFailed"]}, EVICT_OR_FAIL),
        ({"action": "TerminateJob", "exitCode": 3}, EXIT_3),
        ({"action": "RestartPod", "event": "PodPending", "timeout": "5m"}, PENDING_TIMEOUT),
    ],
    ids=["event", "events", "exitCode", "timeout"],
)
def test_policy_from_manifest(raw: dict[str, object], expected: Policy) -> None:
    assert Policy.from_manifest(raw) == expected


@pytest.mark.parametrize(
    ("text", "seconds", "go"),
    [
        ("90s", 90, "1m30s"),
        ("1h", 3600, "1h0m0s"),
        ("1m30s", 90, "1m30s"),
        ("500ms", 0.5, "500ms"),
        ("2.5s", 2.5, "2.5s"),
    ],
    ids=["90s", "1h", "1m30s", "500ms", "fraction"],
)
def test_go_durations(text: str, seconds: float, go: str) -> None:
    assert parse_go_duration(text).total_seconds() == seconds
    assert format_go_duration(parse_go_duration(text)) == go


def test_bad_duration_is_rejected() -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_go_duration("5 minutes")


def test_stored_policy_with_bad_timeout_acts_without_delay() -> None:
    policy = Policy.from_manifest({"action": "RestartJob", "event": "PodFailed", "timeout": "soon"})
    assert policy == Policy("RestartJob", frozenset({"PodFailed"}))


# ---- through the transition --------------------------------------------------------------------

FAILED_0 = ev.PodFailed("job-worker-0", "worker", pod_uid="uid-worker-0", exit_code=1)


def _running(**kwargs: Any) -> ObservedJob:
    return state("Running", pod_list=pods("worker", "Failed", "Running", "Running"), **kwargs)


def test_immediate_action_is_announced_and_executed() -> None:
    result = transition(_running(policies=[RESTART]), FAILED_0, NOW)
    assert RecordEvent("Normal", "ExecuteAction", "Start to execute action RestartJob ") in result.effects
    assert result.state.status.phase == "Restarting"
    assert result.state.status.retry_count == 1


def test_delayed_action_schedules_a_timer_and_changes_nothing_else() -> None:
    delayed = Policy("RestartJob", frozenset({"PodFailed"}), timeout=timedelta(seconds=90))
    result = transition(_running(policies=[delayed]), FAILED_0, NOW)
    assert result.effects == (
        RecordEvent("Normal", "ExecuteAction", "Execute action RestartJob after 1m30s"),
        ScheduleTimer("job-worker-0", NOW + timedelta(seconds=90), "RestartJob"),
    )
    assert result.state.status.phase == "Running"
    assert result.state.timers[0].action == "RestartJob"


def test_same_delayed_action_for_same_pod_is_not_rescheduled() -> None:
    delayed = Policy("RestartJob", frozenset({"PodFailed"}), timeout=timedelta(seconds=90))
    first = transition(_running(policies=[delayed]), FAILED_0, NOW)
    second = transition(first.state, FAILED_0, NOW + timedelta(seconds=10))
    assert not any(isinstance(e, ScheduleTimer) for e in second.effects)
    assert second.state.timers == first.state.timers


def test_timer_fires_the_action_without_policy_lookup() -> None:
    delayed = Policy("RestartJob", frozenset({"PodFailed"}), timeout=timedelta(seconds=90))
    first = transition(_running(policies=[delayed]), FAILED_0, NOW)
    fired = transition(first.state, ev.TimerFired("job-worker-0"), NOW + timedelta(seconds=90))
    assert fired.state.status.phase == "Restarting"
    assert fired.state.timers == ()


def test_cancelled_timer_firing_does_nothing() -> None:
    s = _running()
    result = transition(s, ev.TimerFired("job-worker-0"), NOW)
    assert result.effects == ()
    assert result.state == s


def _timer(pod: str, action: str, event: str, task: str = "worker", uid: str = "") -> DelayedAction:
    return DelayedAction(pod, action, event, NOW + timedelta(minutes=5), task, pod, uid)


@pytest.mark.parametrize(
    ("timer", "event", "cancelled"),
    [
        (
            _timer("job-worker-0", "RestartPod", "PodPending", uid="u0"),
            ev.PodRunning("job-worker-0", "worker", pod_uid="u0"),
            True,
        ),
        (
            _timer("job-worker-0", "RestartPod", "PodPending", uid="u0"),
            ev.PodRunning("job-worker-0", "worker", pod_uid="other-pod"),
            False,
        ),
        (
            _timer("job-worker-0", "RestartPod", "PodPending", uid="u0"),
            ev.PodPending("job-worker-0", "worker", pod_uid="u0"),
            False,
        ),
        (
            _timer("job-worker-0", "RestartJob", "PodFailed"),
            ev.PodRunning("job-worker-0", "worker"),
            True,
        ),
        (
            _timer("job-worker-0", "RestartJob", "PodEvicted"),
            ev.PodRunning("job-worker-0", "worker"),
            True,
        ),
        (
            _timer("job-worker-0", "RestartJob", "PodFailed"),
            ev.PodEvicted("job-worker-0", "worker"),
            False,
        ),
    ],
    ids=[
        "pending-timer-pod-left-pending",
        "pending-timer-other-incarnation",
        "pending-timer-still-pending",
        "failed-timer-pod-running-again",
        "evicted-timer-pod-running-again",
        "failed-timer-kept-on-eviction",
    ],
)
def test_pod_events_cancel_their_pods_timers(
    timer: DelayedAction, event: ev.JobEvent, cancelled: bool
) -> None:
    s = state("Running", pod_list=pods("worker", "Running", "Running", "Running"), timers=[timer])
    result = transition(s, event, NOW)
    assert (CancelTimer(timer.key) in result.effects) == cancelled
    assert (timer in result.state.timers) != cancelled


@pytest.mark.parametrize(
    ("action", "target_pod", "cancelled"),
    [
        ("AbortJob", "job-worker-0", {"job-worker-1", "job-ps-0"}),
        ("RestartTask", "job-worker-0", {"job-worker-2"}),
        ("RestartPod", "job-worker-0", set()),
    ],
    ids=[
        "job-action-cancels-job-timers",
        "task-action-cancels-same-task",
        "pod-action-cancels-same-pod-only",
    ],
)
def test_executed_action_cancels_superseded_timers(action: str, target_pod: str, cancelled: set[str]) -> None:
    timers = [
        _timer("job-worker-1", "RestartJob", "PodFailed"),
        _timer("job-ps-0", "TerminateJob", "PodEvicted", task="ps"),
        _timer("job-worker-2", "RestartTask", "PodFailed"),
        _timer("job-ps-1", "RestartTask", "PodFailed", task="ps"),
        _timer("job-worker-3", "RestartPod", "PodFailed"),
    ]
    policy = Policy(action, frozenset({"PodFailed"}))
    s = state(
        "Running",
        tasks=(ObservedTaskSpec("ps", 2, 2), ObservedTaskSpec("worker", 4, 4)),
        pod_list=(
            *pods("ps", "Running", "Running"),
            *pods("worker", "Failed", "Running", "Running", "Running"),
        ),
        policies=[policy],
        timers=timers,
    )
    result = transition(s, ev.PodFailed(target_pod, "worker", exit_code=1), NOW)
    assert {e.key for e in result.effects if isinstance(e, CancelTimer)} == cancelled
    assert {t.key for t in result.state.timers} == {t.key for t in timers} - cancelled


def test_stale_pod_event_only_syncs() -> None:
    s = state(
        "Running",
        pod_list=pods("worker", "Failed", "Running", "Running"),
        policies=[RESTART],
        version=2,
    )
    old = ev.PodFailed("job-worker-0", "worker", job_version=1, exit_code=1)
    assert transition(s, old, NOW).state.status.phase == "Running"
    current = ev.PodFailed("job-worker-0", "worker", job_version=2, exit_code=1)
    assert transition(s, current, NOW).state.status.phase == "Restarting"


def test_event_of_a_previous_job_with_same_name_only_syncs() -> None:
    s = state("Running", pod_list=pods("worker", "Failed", "Running", "Running"), policies=[RESTART])
    foreign = ev.PodFailed("job-worker-0", "worker", job_uid="another-uid", exit_code=1)
    assert transition(s, foreign, NOW).state.status.phase == "Running"


def test_podgroup_unknown_raises_the_unknown_event() -> None:
    s = state(
        "Running",
        pod_list=pods("worker", "Running", "Running", "Running"),
        policies=[Policy("RestartJob", frozenset({"Unknown"}))],
    )
    assert transition(s, ev.PodGroupPhaseChanged("Unknown"), NOW).state.status.phase == "Restarting"
    assert transition(s, ev.PodGroupPhaseChanged("Running"), NOW).state.status.phase == "Running"


def test_job_updated_never_matches_a_policy_as_in_volcano() -> None:
    s = state(
        "Running",
        pod_list=pods("worker", "Running", "Running", "Running"),
        policies=[Policy("AbortJob", frozenset({"JobUpdated"}))],
    )
    assert transition(s, ev.JobUpdated(), NOW).state.status.phase == "Running"


PENDING_0 = ev.PodPending("job-worker-0", "worker", pod_uid="uid-worker-0")
RUNNING_0 = ev.PodRunning("job-worker-0", "worker", pod_uid="uid-worker-0")
EXIT_0 = Policy("RestartJob", exit_code=0)


@pytest.mark.parametrize(
    ("phase", "policies", "timers", "event", "folded"),
    [
        ("Pending", [], [], PENDING_0, True),
        ("Running", [ABORT_ANY, RESTART], [], PENDING_0, True),
        ("Pending", [PENDING_NO_TIMEOUT], [], PENDING_0, True),
        ("Pending", [PENDING_TIMEOUT], [], PENDING_0, False),
        ("Pending", [EXIT_0], [], PENDING_0, False),
        ("Running", [], [], RUNNING_0, True),
        (
            "Running",
            [],
            [_timer("job-worker-0", "RestartPod", "PodPending", uid="uid-worker-0")],
            RUNNING_0,
            False,
        ),
        ("Running", [], [], ev.OutOfSync(), True),
        ("Running", [], [], FAILED_0, False),
    ],
    ids=[
        "creation-no-policy",
        "creation-policies-for-other-events",
        "creation-pending-policy-without-timeout",
        "creation-pending-policy-with-timeout",
        "creation-exit-code-policy",
        "start",
        "start-with-pending-timer",
        "out-of-sync",
        "failure",
    ],
)
def test_an_event_folded_into_a_sync_transitions_exactly_as_that_sync(
    phase: str, policies: list[Policy], timers: list[DelayedAction], event: ev.JobEvent, folded: bool
) -> None:
    """The controller folds a burst of events `only_syncs` accepts into one OutOfSync: that is
    safe only if each of them would have done exactly what the sync does."""
    before = state(
        phase, pod_list=pods("worker", "Pending", "Running", "Running"), policies=policies, timers=timers
    )
    assert only_syncs(before, event) is folded
    if folded:
        assert transition(before, event, NOW) == transition(before, ev.OutOfSync(), NOW)
