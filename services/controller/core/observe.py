"""From Kubernetes JSON to the lifecycle's input: the job's state and the event a change raised.

The controller shell calls `observe_job` with the Job, its pods and its PodGroup as the watcher
last saw them, and `pod_event` / `podgroup_event` / `job_event` for each watched change, as
Volcano's informer handlers classify them. Pure parsing: nothing here decides an action.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from services.controller.core import events as ev
from services.controller.core.jobstate import (
    DelayedAction,
    ObservedCondition,
    ObservedDependsOn,
    ObservedJob,
    ObservedJobStatus,
    ObservedTaskSpec,
    PodGroupView,
    PodView,
    Volume,
    pod_name,
)
from services.controller.core.owners import controller_of
from services.controller.core.policies import parse_go_duration, policies_from_manifest
from shared.volcano import keys
from shared.volcano.enums import JobPhase
from shared.volcano.objects import JobObject, PodGroupObject, PodObject

Json = Mapping[str, Any]


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def task_specs(job: Json) -> tuple[ObservedTaskSpec, ...]:
    tasks = []
    for raw in (job.get("spec") or {}).get("tasks") or ():
        depends = raw.get("dependsOn")
        partition = raw.get("partitionPolicy") or {}
        tasks.append(
            ObservedTaskSpec(
                name=str(raw.get("name", "")),
                replicas=_int(raw.get("replicas")),
                min_available=None if raw.get("minAvailable") is None else _int(raw["minAvailable"]),
                max_retry=_int(raw.get("maxRetry"), 3),
                policies=policies_from_manifest(raw.get("policies")),
                depends_on=ObservedDependsOn(
                    tuple(depends.get("name") or ()), str(depends.get("iteration") or "all")
                )
                if depends
                else None,
                partition_size=_int(partition.get("partitionSize")),
            )
        )
    return tuple(tasks)


def status_from_json(raw: Json | None) -> ObservedJobStatus:
    raw = raw or {}
    state = raw.get("state") or {}
    duration = raw.get("runningDuration")
    return ObservedJobStatus(
        phase=str(state.get("phase") or ""),
        reason=str(state.get("reason") or ""),
        message=str(state.get("message") or ""),
        last_transition_time=parse_time(state.get("lastTransitionTime")),
        pending=_int(raw.get("pending")),
        running=_int(raw.get("running")),
        succeeded=_int(raw.get("succeeded")),
        failed=_int(raw.get("failed")),
        terminating=_int(raw.get("terminating")),
        unknown=_int(raw.get("unknown")),
        version=_int(raw.get("version")),
        retry_count=_int(raw.get("retryCount")),
        min_available=_int(raw.get("minAvailable")),
        task_status_count={
            task: {phase: _int(n) for phase, n in ((counts or {}).get("phase") or {}).items()}
            for task, counts in (raw.get("taskStatusCount") or {}).items()
        },
        controlled_resources=dict(raw.get("controlledResources") or {}),
        conditions=tuple(
            ObservedCondition(str(c["status"]), t)
            for c in raw.get("conditions") or ()
            if (t := parse_time(c.get("lastTransitionTime"))) is not None
        ),
        running_duration=parse_go_duration(duration) if isinstance(duration, str) else None,
    )


def _restarts(pod: Json) -> int:
    status = pod.get("status") or {}
    return sum(
        _int(s.get("restartCount"))
        for s in (
            *(status.get("initContainerStatuses") or ()),
            *(status.get("containerStatuses") or ()),
        )
    )


def pod_view(pod: Json) -> PodView:
    view = PodObject(pod)
    annotations, status = view.annotations, view.status
    statuses = status.get("containerStatuses") or ()
    name = str(view.name)
    index_text = annotations.get(keys.TASK_INDEX) or name.rsplit("-", 1)[-1]
    return PodView(
        name=name,
        task=str(annotations.get(keys.TASK_SPEC) or keys.DEFAULT_TASK_SPEC),
        index=_int(index_text),
        uid=str(view.uid),
        phase=str(status.get("phase") or "Pending"),
        job_version=_int(annotations.get(keys.JOB_VERSION)),
        deleting=view.deleting,
        out_of_sync=keys.OUT_OF_SYNC in annotations,
        containers_ready=all(bool(s.get("ready")) for s in statuses),
        restarts=_restarts(pod),
        partition=str(view.label(keys.PARTITION_ID)),
    )


def podgroup_view(podgroup: Json) -> PodGroupView:
    """The PodGroup, with its newest True condition if that is not `Scheduled`."""
    status = podgroup.get("status") or {}
    true_conditions = [c for c in status.get("conditions") or () if c.get("status") == "True"]
    newest = max(true_conditions, key=lambda c: str(c.get("lastTransitionTime") or ""), default=None)
    unready = newest is not None and newest.get("type") != "Scheduled"
    return PodGroupView(
        name=str(PodGroupObject(podgroup).name),
        phase=str(status.get("phase") or ""),
        unready_type=str(newest.get("type", "")) if unready and newest else "",
        unready_message=str(newest.get("message", "")) if unready and newest else "",
    )


def observe_job(
    job: Json,
    pods: Iterable[Json] = (),
    podgroup: Json | None = None,
    timers: Iterable[DelayedAction] = (),
) -> ObservedJob:
    """The lifecycle's view of a Job (its JSON), the pods it controls, its PodGroup and the
    delayed actions the shell keeps for it (from earlier transitions)."""
    view = JobObject(job)
    spec = view.spec
    uid = str(view.uid)
    ttl = spec.get("ttlSecondsAfterFinished")
    min_success = spec.get("minSuccess")
    return ObservedJob(
        uid=uid,
        namespace=str(view.namespace or "default"),
        name=str(view.name),
        created_at=parse_time(view.creation_timestamp),
        queue=str(spec.get("queue") or "default"),
        min_available=_int(spec.get("minAvailable")),
        min_success=None if min_success is None else _int(min_success),
        max_retry=_int(spec.get("maxRetry"), 3),
        ttl_seconds_after_finished=None if ttl is None else _int(ttl),
        tasks=task_specs(job),
        policies=policies_from_manifest(spec.get("policies")),
        plugins=tuple(sorted((spec.get("plugins") or {}).keys())),
        volumes=tuple(
            Volume(
                str(v.get("mountPath", "")),
                str(v.get("volumeClaimName") or ""),
                v.get("volumeClaim") is not None,
            )
            for v in spec.get("volumes") or ()
        ),
        status=status_from_json(job.get("status")),
        pods=tuple(pod_view(p) for p in pods if _controlled_by(p, uid)),
        podgroup=podgroup_view(podgroup) if podgroup else None,
        timers=tuple(timers),
        deleting=view.deleting,
    )


def _controlled_by(pod: Json, uid: str) -> bool:
    controller = controller_of(pod)
    return controller is None or not uid or controller.get("uid") == uid


# ---- watched changes -> events ----------------------------------------------------------------


def _base(pod: Json) -> dict[str, Any]:
    view = pod_view(pod)
    controller = controller_of(pod) or {}
    return {
        "pod": view.name,
        "task": view.task,
        "pod_uid": view.uid,
        "job_version": view.job_version,
        "job_uid": str(controller.get("uid", "")),
        "partition": view.partition,
    }


def _exit_code(pod: Json) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    if not statuses:
        return 0
    terminated = (statuses[0].get("state") or {}).get("terminated")
    return _int(terminated.get("exitCode")) if terminated else 0


def task_completed(state: ObservedJob, task: str) -> bool:
    spec = state.task(task)
    if spec is None or spec.replicas <= 0:
        return False
    return sum(1 for p in state.pods_of(task) if p.phase == "Succeeded") >= spec.replicas


def task_failed(state: ObservedJob, task: str) -> bool:
    """Summed container restarts of the task's live pods reached `maxRetry` (-1: never; 0: 3)."""
    spec = state.task(task)
    if spec is None or spec.replicas == 0 or spec.max_retry == -1:
        return False
    budget = spec.max_retry or 3
    live = (p for p in state.pods_of(task) if p.phase in ("Running", "Pending"))
    return sum(p.restarts for p in live) >= budget


def pod_event(old: Json | None, new: Json | None, state: ObservedJob) -> ev.JobEvent:
    """The event Volcano's addPod/updatePod/deletePod raise. `state` must already include `new`
    (the task-level checks count the task's pods after the change)."""
    if new is None:  # deleted
        assert old is not None
        view = pod_view(old)
        if view.out_of_sync:  # we deleted it ourselves
            return ev.OutOfSync(view.name, view.task)
        return ev.PodEvicted(**_base(old))
    view = pod_view(new)
    if view.out_of_sync:
        return ev.OutOfSync(view.name, view.task)
    base = _base(new)
    if old is None:
        return ev.PodPending(**base)
    old_phase = str((old.get("status") or {}).get("phase") or "Pending")
    phase = view.phase
    if phase == "Failed":
        return (
            ev.PodFailed(**base, exit_code=_exit_code(new))
            if old_phase != "Failed"
            else ev.OutOfSync(view.name, view.task)
        )
    if phase == "Succeeded":
        if old_phase != "Succeeded" and task_completed(state, view.task):
            return ev.TaskCompleted(**base)
        return ev.PodSucceeded(**base)
    if phase in ("Running", "Pending"):
        if old_phase != phase:
            return ev.PodRunning(**base) if phase == "Running" else ev.PodPending(**base)
        if task_failed(state, view.task):
            return ev.TaskFailed(**base)
    return ev.OutOfSync(view.name, view.task)


def missed_pod_events(pods: Iterable[Json], state: ObservedJob) -> list[ev.JobEvent]:
    """After a restart: the edge events of pods that ended while the controller was away.

    The cache is primed from a list, so a pod that failed or succeeded meanwhile arrives already
    ended, and its change is never seen (a replayed watch event is older than the listed pod).
    For a Pending or Running job, each of its current version's Failed pods raises PodFailed and
    each completed task TaskCompleted once more. Handling one twice is harmless: an executed
    restart moved the job to a new version or out of those phases, a pending delayed action of the
    same kind stays as it is, and SyncJob only recounts. A Running job whose last status counted
    every pod of a task, and which now misses one of them, lost it to someone else meanwhile:
    PodEvicted, as Volcano raises for a pod deleted under it.
    """
    if state.status.phase not in (JobPhase.PENDING, JobPhase.RUNNING) or state.deleting:
        return []
    events: list[ev.JobEvent] = []
    completed: set[str] = set()
    viewed = sorted(((pod_view(p), p) for p in pods), key=lambda pair: pair[0].name)
    for view, pod in viewed:
        if view.deleting or view.out_of_sync or view.job_version != state.status.version:
            continue
        if view.phase == "Failed":
            events.append(ev.PodFailed(**_base(pod), exit_code=_exit_code(pod)))
        elif view.phase == "Succeeded" and view.task not in completed and task_completed(state, view.task):
            completed.add(view.task)
            events.append(ev.TaskCompleted(**_base(pod)))
    if state.status.phase == JobPhase.RUNNING and not state.status.terminating:
        present = {view.name for view, _ in viewed}
        for task in state.tasks:
            counted = sum((state.status.task_status_count.get(task.name) or {}).values())
            if counted < task.replicas:
                continue  # not every pod was there at the last status: maybe never created
            for index in range(task.replicas):
                name = pod_name(state.name, task.name, index)
                if name not in present:
                    events.append(
                        ev.PodEvicted(name, task.name, job_version=state.status.version, job_uid=state.uid)
                    )
    return events


def podgroup_event(old: Json | None, new: Json) -> ev.JobEvent | None:
    """Only a phase change of the job's PodGroup concerns the job."""
    old_phase = ((old or {}).get("status") or {}).get("phase") or ""
    new_phase = (new.get("status") or {}).get("phase") or ""
    if old is not None and old_phase == new_phase:
        return None
    return ev.PodGroupPhaseChanged(str(new_phase))


def job_event(old: Json | None, new: Json) -> ev.JobEvent | None:
    """Job added, or its spec or phase changed: OutOfSync. Anything else (our own status writes
    of counters) raises nothing, which is what keeps the controller from chasing itself."""
    if old is None:
        return ev.OutOfSync()
    old_phase = ((old.get("status") or {}).get("state") or {}).get("phase")
    new_phase = ((new.get("status") or {}).get("state") or {}).get("phase")
    if old.get("spec") != new.get("spec"):
        return ev.JobUpdated()
    if old_phase != new_phase:
        return ev.OutOfSync()
    return None
