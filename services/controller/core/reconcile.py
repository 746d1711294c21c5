"""The three operations every job state is built from: SyncJob, KillJob and KillTarget.

`lifecycle` picks the operation and the status rule for the job's phase and action; these
functions compute the pods to create or delete, the counters, the PodGroup and plugin effects
and the new status, as Volcano's `syncJob` and `killPods` do, without touching anything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from services.controller.core.effects import (
    CreatePods,
    DeletePluginResources,
    DeletePodGroup,
    DeletePods,
    DesiredPod,
    Effect,
    EnsurePluginResources,
    EnsurePodGroup,
    EnsurePVCs,
    RecordEvent,
)
from services.controller.core.jobstate import (
    POD_PHASES,
    ObservedCondition,
    ObservedJob,
    ObservedJobStatus,
    PodView,
    pod_name,
)
from shared.volcano.enums import JobPhase

# A status rule sees the freshly counted status and returns it with a new phase (and perhaps a
# new retry count), or None when the phase stays: Volcano's UpdateStatusFn.
StatusRule = Callable[[ObservedJob, ObservedJobStatus], ObservedJobStatus | None]

# Plugins whose OnJobAdd/OnJobDelete create or delete Kubernetes objects.
PLUGINS_WITH_OBJECTS = frozenset({"svc", "ssh"})
# Pods created by one sync: a job of two billion replicas neither builds two billion manifests in
# memory nor floods the API; the created pods' events trigger the syncs that create the next ones.
CREATE_BATCH = 500


@dataclass(frozen=True)
class Target:
    """What a RestartTask / RestartPod / RestartPartition kills."""

    kind: str  # "task" | "pod" | "partition"
    task: str = ""
    pod: str = ""
    partition: str = ""


@dataclass(frozen=True)
class Outcome:
    status: ObservedJobStatus
    effects: tuple[Effect, ...]


class _Counter:
    def __init__(self) -> None:
        self.phases = dict.fromkeys(POD_PHASES, 0)
        self.terminating = 0
        self.per_task: dict[str, dict[str, int]] = {}

    def add(self, pod: PodView, phase: str | None = None) -> None:
        phase = phase or pod.phase
        phase = phase if phase in self.phases else "Unknown"
        self.phases[phase] += 1
        task = self.per_task.setdefault(pod.task, {})
        task[phase] = task.get(phase, 0) + 1

    def into(self, status: ObservedJobStatus) -> ObservedJobStatus:
        return replace(
            status,
            pending=self.phases["Pending"],
            running=self.phases["Running"],
            succeeded=self.phases["Succeeded"],
            failed=self.phases["Failed"],
            unknown=self.phases["Unknown"],
            terminating=self.terminating,
            task_status_count={t: dict(c) for t, c in self.per_task.items()},
        )


def append_condition(
    conditions: Iterable[ObservedCondition], c: ObservedCondition
) -> tuple[ObservedCondition, ...]:
    """One condition per phase: re-entering a phase moves its condition to the end."""
    return (*(old for old in conditions if old.status != c.status), c)


def _stamp(status: ObservedJobStatus, now: datetime) -> ObservedJobStatus:
    stamped = replace(status, last_transition_time=now)
    return replace(
        stamped, conditions=append_condition(stamped.conditions, ObservedCondition(status.phase, now))
    )


def _is_ready_for_dependents(state: ObservedJob, task_name: str) -> bool:
    """Volcano's isDependsOnPodsReady: at least the task's minAvailable pods Succeeded, or Running
    with every container ready."""
    task = state.task(task_name)
    if task is None:
        return True
    ready = sum(
        1
        for p in state.pods_of(task.name)
        if _is_task_pod(state, task.name, task.replicas, p)
        and (p.phase == "Succeeded" or (p.phase == "Running" and p.containers_ready))
    )
    return task.min_available is None or ready >= task.min_available


def _is_task_pod(state: ObservedJob, task: str, replicas: int, pod: PodView) -> bool:
    """Is `pod` one the task's spec asks for (its name at an index below `replicas`)?"""
    return 0 <= pod.index < replicas and pod.name == pod_name(state.name, task, pod.index)


def _missing(state: ObservedJob, task: str, task_index: int, replicas: int, budget: int) -> list[DesiredPod]:
    """The first `budget` pods of the task that do not exist yet, lowest indexes first."""
    present = {p.name for p in state.pods_of(task)}
    missing: list[DesiredPod] = []
    index = 0
    while index < replicas and len(missing) < budget:
        name = pod_name(state.name, task, index)
        if name not in present:
            missing.append(DesiredPod(task_index, index, name, task))
        index += 1
    return missing


def dependencies_ready(state: ObservedJob, task_name: str) -> bool:
    """May `task_name` create its pods? `iteration: any` (with several names) needs one ready
    dependency, otherwise all must be ready."""
    task = state.task(task_name)
    if task is None or task.depends_on is None:
        return True
    names = task.depends_on.names
    if len(names) > 1 and task.depends_on.iteration == "any":
        return any(_is_ready_for_dependents(state, n) for n in names)
    return all(_is_ready_for_dependents(state, n) for n in names)


def _initiate(state: ObservedJob, now: datetime) -> tuple[ObservedJobStatus, list[Effect]]:
    """initiateJob (phase "" or Pending) or initOnJobUpdate (any other phase)."""
    status = state.status
    effects: list[Effect] = []
    controlled = dict(status.controlled_resources)
    if status.phase in ("", JobPhase.PENDING):
        if status.phase == "":
            status = _stamp(replace(status, phase=JobPhase.PENDING, min_available=state.min_available), now)
        new_plugins = tuple(p for p in state.plugins if controlled.get(f"plugin-{p}") != p)
        if new_plugins:
            effects.append(EnsurePluginResources(new_plugins))
            controlled.update({f"plugin-{p}": p for p in new_plugins})
        if state.volumes:
            named = tuple(v.claim_name for v in state.volumes if v.claim_name)
            effects.append(EnsurePVCs(named, sum(1 for v in state.volumes if not v.claim_name)))
            controlled.update({f"volume-pvc-{n}": n for n in named})
    elif "svc" in state.plugins:
        # OnJobUpdate: only svc rewrites its hosts ConfigMap (the job may have been scaled).
        effects.append(EnsurePluginResources(("svc",), refresh=True))
    effects.append(EnsurePodGroup(state.podgroup_name))
    return replace(status, controlled_resources=controlled), effects


def _podgroup_pending_event(state: ObservedJob) -> list[Effect]:
    pg = state.podgroup
    if pg is None or not pg.unready_type:
        return []
    return [
        RecordEvent(
            "Warning",
            "PodGroupPending",
            f"PodGroup {state.namespace}:{state.name} {pg.unready_type.lower()}, "
            f"reason: {pg.unready_message}",
        )
    ]


def sync_job(
    state: ObservedJob, rule: StatusRule | None, now: datetime, *, create_batch: int = CREATE_BATCH
) -> Outcome:
    """SyncJob: initiate, then create missing pods (once the PodGroup left Pending; in bounded
    batches, the rest on the syncs their creation and placement trigger), delete out-of-sync
    and surplus pods, recount, and let the phase's rule move the phase."""
    if state.deleting:
        return Outcome(state.status, ())
    before, effects = _initiate(state, now)
    effects += _podgroup_pending_event(state)
    pg = state.podgroup
    if pg is None or pg.phase in ("", "Pending"):
        # Before the scheduler admits the PodGroup, no pods: only the rule runs on old counts.
        status = (rule(state, before) if rule else None) or before
        if status != before:
            status = _stamp(status, now)
        return Outcome(status, tuple(effects))

    counter = _Counter()
    to_create: list[DesiredPod] = []
    to_delete: list[str] = []
    # At most `create_batch` new pods per sync, and no more unplaced pods than the gang needs
    # (or one batch): a job of two billion BestEffort replicas then makes pods as fast as they
    # are placed, not as fast as the API server takes them.
    waiting = sum(1 for p in state.pods if p.phase == "Pending" and not p.deleting)
    budget = max(0, min(create_batch, max(state.min_available, create_batch) - waiting))
    for task_index, task in enumerate(state.tasks):
        existing = {p.name: p for p in state.pods_of(task.name)}
        # The task's pods that exist, in index order: walking range(replicas) instead would cost
        # two billion steps for `replicas: 2147483647`, whatever few pods exist.
        wanted = sorted(
            (p for p in existing.values() if _is_task_pod(state, task.name, task.replicas, p)),
            key=lambda p: p.index,
        )
        for pod in wanted:
            del existing[pod.name]
            if pod.deleting:
                counter.terminating += 1
                continue
            if pod.out_of_sync:
                to_delete.append(pod.name)
            counter.add(pod)
        missing = _missing(state, task.name, task_index, task.replicas, budget) if budget else []
        if missing and dependencies_ready(state, task.name):
            to_create += missing
            budget -= len(missing)
            for ref in missing:
                counter.add(PodView(ref.name, ref.task, ref.pod_index), "Pending")
        # Pods beyond the desired replicas: the task was scaled down.
        to_delete += sorted(p.name for p in existing.values() if not p.deleting)
        counter.terminating += sum(1 for p in existing.values() if p.deleting)
    counter.terminating += len(to_delete)

    if to_create:
        effects.append(CreatePods(tuple(to_create), before.version, before.retry_count))
    if to_delete:
        effects.append(DeletePods(tuple(to_delete), "SyncJob"))
    counted = replace(counter.into(before), min_available=state.min_available)
    status = (rule(state, counted) if rule else None) or counted
    if status != before:
        status = _stamp(status, now)
    return Outcome(status, tuple(effects))


def _finish_kill(
    state: ObservedJob,
    counted: ObservedJobStatus,
    doomed: list[str],
    reason: str,
    rule: StatusRule | None,
    now: datetime,
    full: bool,
) -> Outcome:
    effects: list[Effect] = []
    if doomed:
        effects.append(DeletePods(tuple(sorted(doomed)), reason))
    status = rule(state, counted) if rule else None
    status = _stamp(status, now) if status is not None else counted
    if state.created_at is not None and status.last_transition_time is not None:
        status = replace(status, running_duration=status.last_transition_time - state.created_at)
    # Plugins' OnJobDelete: forget every plugin, delete the objects of those that made some.
    controlled = dict(status.controlled_resources)
    owned = tuple(p for p in state.plugins if controlled.get(f"plugin-{p}") == p)
    if any(p in PLUGINS_WITH_OBJECTS for p in owned):
        effects.append(DeletePluginResources(tuple(p for p in owned if p in PLUGINS_WITH_OBJECTS)))
    for plugin in owned:
        del controlled[f"plugin-{plugin}"]
    status = replace(status, controlled_resources=controlled)
    if full:
        # Always asked for (NotFound is success): the shell's view of the PodGroup may lag.
        pg_name = state.podgroup.name if state.podgroup else state.podgroup_name
        effects.append(DeletePodGroup(pg_name))
    return Outcome(status, tuple(effects))


def kill_job(
    state: ObservedJob, keep_finished: bool, rule: StatusRule | None, reason: str, now: datetime
) -> Outcome:
    """KillJob: bump the version, delete every pod not kept (finished pods are kept with
    `keep_finished`, and always on the last retry), delete the PodGroup."""
    if state.deleting:
        return Outcome(state.status, ())
    counter = _Counter()
    doomed: list[str] = []
    last_retry = state.status.retry_count >= state.max_retry - 1
    for pod in state.pods:
        if pod.deleting:
            counter.terminating += 1
        elif (keep_finished or last_retry) and pod.phase in ("Succeeded", "Failed"):
            # Volcano stopped counting kept pods in a refactor; we count them, as it long did,
            # so a Completed job still shows how many pods succeeded.
            counter.add(pod)
        else:
            doomed.append(pod.name)
            counter.terminating += 1
    base = replace(state.status, version=state.status.version + 1)
    return _finish_kill(state, counter.into(base), doomed, reason, rule, now, full=True)


def kill_target(
    state: ObservedJob, target: Target, rule: StatusRule | None, reason: str, now: datetime
) -> Outcome:
    """KillTarget: delete only the task's, the pod's or the partition's pods; keep the PodGroup
    and the version, so the scheduler does not start the gang over."""
    if state.deleting:
        return Outcome(state.status, ())

    def targeted(pod: PodView) -> bool:
        if pod.task != target.task:
            return False
        if target.kind == "pod":
            return pod.name == target.pod
        if target.kind == "partition":
            return pod.partition == target.partition
        return True

    counter = _Counter()
    doomed: list[str] = []
    for pod in state.pods:
        if pod.deleting:
            counter.terminating += 1
        elif targeted(pod):
            doomed.append(pod.name)
            counter.terminating += 1
        else:
            counter.add(pod)
    if target.kind == "partition" and not doomed:
        return Outcome(state.status, ())
    return _finish_kill(state, counter.into(state.status), doomed, reason, rule, now, full=False)
