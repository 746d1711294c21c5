"""Volcano's Job state machine as one pure function: (job state, event, now) -> (state, effects).

The controller shell observes a job (`observe.observe_job`), turns each watched change into a
`JobEvent`, calls `transition` and applies the returned effects in order. Policy resolution and
delayed actions come first (policies.py), then the phase's row of Volcano's state table picks
SyncJob, KillJob or KillTarget with a status rule (reconcile.py), then the TTL is looked after.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from services.controller.core import events as ev
from services.controller.core.effects import (
    CancelTimer,
    DeleteJob,
    DeletePodGroup,
    Effect,
    RecordEvent,
    ScheduleTimer,
    UpdateJobStatus,
)
from services.controller.core.jobstate import (
    FINISHED_PHASES,
    DelayedAction,
    ObservedJob,
    ObservedJobStatus,
)
from services.controller.core.policies import (
    INTERNAL_ACTIONS,
    ResolvedAction,
    action_scope,
    format_go_duration,
    resolve_policy,
)
from services.controller.core.reconcile import (
    Outcome,
    StatusRule,
    Target,
    kill_job,
    kill_target,
    sync_job,
)
from services.controller.core.status import job_status
from shared.volcano.enums import Action, Event, JobPhase

TTL_TIMER_KEY = "ttl-after-finished"
_RESTART_TARGETS: dict[str, str] = {
    Action.RESTART_TASK: "task",
    Action.RESTART_POD: "pod",
    Action.RESTART_PARTITION: "partition",
}
_DRAINING = {
    JobPhase.ABORTING: JobPhase.ABORTED,
    JobPhase.COMPLETING: JobPhase.COMPLETED,
    JobPhase.TERMINATING: JobPhase.TERMINATED,
}
_KILL_TO = {
    Action.ABORT_JOB: JobPhase.ABORTING,
    Action.COMPLETE_JOB: JobPhase.COMPLETING,
    Action.TERMINATE_JOB: JobPhase.TERMINATING,
}


@dataclass(frozen=True)
class Transition:
    state: ObservedJob
    effects: tuple[Effect, ...]


# ---- status rules (Volcano's UpdateStatusFn per state) ---------------------------------------


def _to(phase: JobPhase, *, retry: bool = False) -> StatusRule:
    def rule(_: ObservedJob, status: ObservedJobStatus) -> ObservedJobStatus:
        return replace(status, phase=phase, retry_count=status.retry_count + int(retry))

    return rule


def _pending_rule(state: ObservedJob, status: ObservedJobStatus) -> ObservedJobStatus | None:
    if state.min_available <= status.running + status.succeeded + status.failed:
        return replace(status, phase=JobPhase.RUNNING)
    return None


def _running_rule(state: ObservedJob, status: ObservedJobStatus) -> ObservedJobStatus | None:
    replicas = state.total_replicas
    if replicas == 0:
        return None  # scaled to zero: keep the phase
    min_success = state.min_success
    if min_success is not None and status.succeeded >= min_success:
        return replace(status, phase=JobPhase.COMPLETED)
    if status.succeeded + status.failed == replicas:
        if state.min_available >= state.total_task_min_available:
            for task in state.tasks:
                counts = status.task_status_count.get(task.name)
                if task.min_available is None or counts is None:
                    continue
                if counts.get("Succeeded", 0) < task.min_available:
                    return replace(status, phase=JobPhase.FAILED)
        if min_success is not None and status.succeeded < min_success:
            return replace(status, phase=JobPhase.FAILED)
        if status.succeeded >= state.min_available:
            return replace(status, phase=JobPhase.COMPLETED)
        return replace(status, phase=JobPhase.FAILED)
    if status.pending > replicas - state.min_available:
        return replace(status, phase=JobPhase.PENDING)
    return None


def _restarting_rule(state: ObservedJob, status: ObservedJobStatus) -> ObservedJobStatus | None:
    if status.retry_count >= state.max_retry:
        return replace(status, phase=JobPhase.FAILED)
    if state.total_replicas - status.terminating >= status.min_available:
        return replace(status, phase=JobPhase.PENDING)
    return None


def _drained(phase: JobPhase) -> StatusRule:
    def rule(_: ObservedJob, status: ObservedJobStatus) -> ObservedJobStatus | None:
        if status.terminating or status.pending or status.running:
            return None
        return replace(status, phase=phase)

    return rule


# ---- the state table --------------------------------------------------------------------------


def execute(state: ObservedJob, action: str, target: Target, now: datetime) -> Outcome:
    """One row of Volcano's state table: the job's phase and the action pick the operation."""
    phase = state.status.phase
    if phase in ("", JobPhase.PENDING, JobPhase.RUNNING):
        if action == Action.RESTART_JOB:
            return kill_job(state, False, _to(JobPhase.RESTARTING, retry=True), action, now)
        if action in _RESTART_TARGETS:
            return kill_target(state, target, _to(JobPhase.RESTARTING, retry=True), action, now)
        if action in _KILL_TO:
            return kill_job(state, True, _to(_KILL_TO[Action(action)]), action, now)
        rule = _running_rule if phase == JobPhase.RUNNING else _pending_rule
        return sync_job(state, rule, now)
    if phase == JobPhase.RESTARTING:
        if action == Action.SYNC_JOB:
            return sync_job(state, _restarting_rule, now)
        if action in _RESTART_TARGETS:
            return kill_target(state, target, _restarting_rule, action, now)
        return kill_job(state, False, _restarting_rule, action, now)
    if phase in (JobPhase.ABORTING, JobPhase.ABORTED):
        if action == Action.RESUME_JOB:
            return kill_job(state, True, _to(JobPhase.RESTARTING, retry=True), action, now)
        drain = _drained(JobPhase.ABORTED) if phase == JobPhase.ABORTING else None
        return kill_job(state, True, drain, action, now)
    if phase in _DRAINING:
        return kill_job(state, True, _drained(_DRAINING[JobPhase(phase)]), action, now)
    # Completed, Failed, Terminated: sweep leftovers, never leave the phase.
    return kill_job(state, True, None, action, now)


# ---- delayed actions -------------------------------------------------------------------------


def _superseded(timers: tuple[DelayedAction, ...], done: DelayedAction) -> list[DelayedAction]:
    """Delayed actions made pointless by executing `done` (Volcano's cleanupDelayActions)."""
    scope = action_scope(done.action)
    same_scope = [t for t in timers if action_scope(t.action) == scope]
    if scope == "task":
        return [t for t in same_scope if t.task == done.task]
    if scope == "pod":
        return [t for t in same_scope if t.pod == done.pod]
    if scope == "partition":
        return [t for t in same_scope if t.partition == done.partition]
    return same_scope


def _cancelled_by_pod_event(state: ObservedJob, event: ev.JobEvent) -> DelayedAction | None:
    """A pod leaving Pending cancels its PodPending timer; Running cancels PodFailed/PodEvicted."""
    if not isinstance(event, ev.POD_EVENTS) or event.event == Event.POD_PENDING:
        return None
    timer = state.timer(event.pod)
    if timer is None:
        return None
    if timer.event == Event.POD_PENDING and timer.pod_uid == event.pod_uid:
        return timer
    if timer.event in (Event.POD_FAILED, Event.POD_EVICTED) and event.event == Event.POD_RUNNING:
        return timer
    return None


# ---- transition ------------------------------------------------------------------------------


def _finish(
    state: ObservedJob,
    outcome: Outcome,
    timers: tuple[DelayedAction, ...],
    effects: list[Effect],
    now: datetime,
) -> Transition:
    body = list(outcome.effects)
    new_state = replace(state, status=outcome.status, timers=timers)
    if outcome.status != state.status:
        # The status is written before the PodGroup goes, as Volcano's killPods does.
        at = next((i for i, e in enumerate(body) if isinstance(e, DeletePodGroup)), len(body))
        body.insert(at, UpdateJobStatus(job_status(new_state)))
    return Transition(new_state, (*effects, *body, *_ttl_effects(new_state, now)))


def ttl_expiry(state: ObservedJob) -> datetime | None:
    """When the GC deletes a finished job: `lastTransitionTime + ttlSecondsAfterFinished`."""
    ttl, finished_at = state.ttl_seconds_after_finished, state.status.last_transition_time
    if ttl is None or finished_at is None or state.status.phase not in FINISHED_PHASES:
        return None
    return finished_at + timedelta(seconds=ttl)


def _ttl_effects(state: ObservedJob, now: datetime) -> list[Effect]:
    expiry = ttl_expiry(state)
    if expiry is None or state.deleting:
        return []
    if now >= expiry:
        return [DeleteJob(state.uid, "ttlSecondsAfterFinished")]
    return [ScheduleTimer(TTL_TIMER_KEY, expiry, "DeleteJob")]


def _on_timer(state: ObservedJob, key: str, now: datetime) -> Transition:
    if key == TTL_TIMER_KEY:
        return Transition(state, tuple(_ttl_effects(state, now)))
    timer = state.timer(key)
    if timer is None:
        return Transition(state, ())  # cancelled meanwhile
    target = Target(_RESTART_TARGETS.get(timer.action, "task"), timer.task, timer.pod, timer.partition)
    outcome = execute(state, timer.action, target, now)
    gone = {*_superseded(state.timers, timer), timer}
    cancels: list[Effect] = [CancelTimer(t.key) for t in state.timers if t in gone and t != timer]
    timers = tuple(t for t in state.timers if t not in gone)
    return _finish(state, outcome, timers, cancels, now)


def _resolved(state: ObservedJob, event: ev.PolicyEvent) -> ResolvedAction:
    """What the job's policies (or the command) make of `event`: Volcano's applyPolicies."""
    job_uid = getattr(event, "job_uid", "")
    stale = bool(job_uid and job_uid != state.uid) or (
        getattr(event, "job_version", 0) < state.status.version
    )
    task = state.task(getattr(event, "task", ""))
    return resolve_policy(
        event=event.event,
        exit_code=getattr(event, "exit_code", 0),
        task_policies=task.policies if task else (),
        job_policies=state.policies,
        commanded_action=event.action if isinstance(event, ev.CommandIssued) else None,
        stale=stale,
    )


def only_syncs(state: ObservedJob, event: ev.JobEvent) -> bool:
    """Whether `transition(state, event)` comes to a sync of the job and nothing else, so that a
    burst of such events may be folded into one sync (the shell's coalescing, Volcano's work
    queue). A pod's creation (PodPending) is one unless a policy acts on it; a pod's start
    (PodRunning) is one unless a delayed action waits on that pod (its start cancels it); as in
    Volcano, whose updatePod raises OutOfSync for a Running pod, no policy reads a start."""
    if isinstance(event, ev.OutOfSync):
        return True
    if isinstance(event, ev.PodRunning):
        return state.timer(event.pod) is None
    if isinstance(event, ev.PodPending):
        decision = _resolved(state, event)
        return decision.action == Action.SYNC_JOB and decision.delay <= timedelta(0)
    return False


def transition(state: ObservedJob, event: ev.JobEvent, now: datetime) -> Transition:
    """Apply one event to one job, as Volcano's job controller processes one request."""
    if isinstance(event, ev.TimerFired):
        return _on_timer(state, event.key, now)
    if isinstance(event, ev.PodCreationFailed):
        message = f"Error creating pods: [{' '.join(event.errors)}]"
        return Transition(state, (RecordEvent("Warning", "FailedCreate", message),))
    if isinstance(event, ev.RetryLimitReached):
        note = RecordEvent(
            "Normal",
            "ExecuteAction",
            f"Job failed on action {event.action} for retry limit reached",
        )
        outcome = execute(state, Action.TERMINATE_JOB, Target("task"), now)
        return _finish(state, outcome, state.timers, [note], now)

    effects: list[Effect] = []
    timers = state.timers
    cancelled = _cancelled_by_pod_event(state, event)
    if cancelled is not None:
        effects.append(CancelTimer(cancelled.key))
        timers = tuple(t for t in timers if t is not cancelled)
        state = replace(state, timers=timers)

    pod = getattr(event, "pod", "")
    task = getattr(event, "task", "")
    pod_uid = getattr(event, "pod_uid", "")
    partition = getattr(event, "partition", "")
    commanded = event.action if isinstance(event, ev.CommandIssued) else None
    if commanded is not None:
        effects.append(
            RecordEvent(
                "Normal",
                "CommandIssued",
                f"Start to execute command {commanded}, and clean it up to make sure executed not "
                "more than once.",
            )
        )
    decision = _resolved(state, event)
    action = decision.action
    if decision.delay > timedelta(0):
        delay_text = format_go_duration(decision.delay)
        effects.append(RecordEvent("Normal", "ExecuteAction", f"Execute action {action} after {delay_text}"))
        existing = state.timer(pod)
        if existing is not None and existing.action == action:
            return Transition(state, tuple(effects))
        delayed = DelayedAction(pod, action, event.event, now + decision.delay, task, pod, pod_uid, partition)
        timers = (*(t for t in timers if t.key != pod), delayed)
        effects.append(ScheduleTimer(pod, delayed.due, action))
        return Transition(replace(state, timers=timers), tuple(effects))

    if action != Action.SYNC_JOB:
        effects.append(RecordEvent("Normal", "ExecuteAction", f"Start to execute action {action} "))
    target = Target(_RESTART_TARGETS.get(action, "task"), task, pod, partition)
    outcome = execute(state, action, target, now)
    if action not in INTERNAL_ACTIONS:
        done = DelayedAction(pod, action, event.event, now, task, pod, pod_uid, partition)
        gone = _superseded(timers, done)
        effects += [CancelTimer(t.key) for t in gone]
        timers = tuple(t for t in timers if t not in gone)
    return _finish(state, outcome, timers, effects, now)
