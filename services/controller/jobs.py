"""Shell: drive each Volcano Job through the pure lifecycle and apply what it returns.

For a change to a Job, its pods or its PodGroup, `JobDriver` builds the job's state from the
cache (`observe_job`), classifies the change (`pod_event`, `podgroup_event`, `job_event`), calls
`transition`, and applies the effects in order, each idempotent. One job's changes are handled
one at a time (a lock per job uid); different jobs run concurrently. A pod change that only asks
for a sync (a pod bound, or Running with no delayed action waiting on it) is not run on its own:
one sync of the job runs shortly after, for the whole burst (a hundred binds, then a hundred
starts), as Volcano's work queue folds repeated requests for one job into one. Timers for delayed actions
and the TTL are armed here and kept in `job_timers` (timers.py), so a restarted controller re-arms
them at their deadlines (`restore_timers`). A phase change is recorded in the `jobs` table and
announced on `jobs.*` and `audit.*` through the controller's outbox, in one transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import structlog
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.controller import metrics
from services.controller.cache import Cache
from services.controller.coalesce import Coalescer
from services.controller.core import effects as fx
from services.controller.core import events as ev
from services.controller.core.jobpodgroup import build_podgroup, podgroup_needs_update
from services.controller.core.jobstate import DelayedAction, JobState
from services.controller.core.lifecycle import transition
from services.controller.core.observe import (
    job_event,
    missed_pod_events,
    observe_job,
    pod_event,
    podgroup_event,
)
from services.controller.core.plugins import plugin_object_names, plugin_objects, ssh
from services.controller.core.plugins.args import plugin_args
from services.controller.core.plugins.ssh import secret_conflict
from services.controller.core.plugins.sshkeys import generate_key_pair
from services.controller.core.pods import build_pod, build_pvc
from services.controller.kube_writes import KubeWrites
from services.controller.timers import TimerStore
from shared import failpoints
from shared.batching import Batcher
from shared.clock import Clock
from shared.kube.client import ApiError
from shared.messages import subjects
from shared.messages.audit import AuditRecorded
from shared.messages.envelope import CloudEvent, new_event
from shared.messages.jobs import JobPhaseChanged
from shared.storage import outbox, tables
from shared.volcano.redaction import is_redacted

log = structlog.get_logger()
Json = dict[str, Any]
SOURCE = "phalanx/controller"
OUT_OF_SYNC = "volcano.sh/controller-out-of-sync"
CREATE_CONCURRENCY = 32
# How long a job's plain syncs wait for the rest of their burst before one of them runs.
SYNC_COALESCE_SECONDS = 0.05
# A job's phase record (its `job_records` row) and the messages that announce the change.
_PhaseRecord = tuple[Json, list[tuple[str, CloudEvent[Any]]]]
_UPDATED_ON_CHANGE = ("phase", "retry_count", "version", "updated_at")


class JobDriver:
    def __init__(
        self,
        cache: Cache,
        kube: KubeWrites,
        sessions: async_sessionmaker[AsyncSession],
        *,
        clock: Clock,
        on_committed: Callable[[], None],
    ) -> None:
        self._cache = cache
        self._kube = kube
        self._sessions = sessions
        self._clock = clock
        self._on_committed = on_committed
        self._locks: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._timers: dict[str, dict[str, DelayedAction]] = defaultdict(dict)
        self._handles: dict[tuple[str, str], asyncio.TimerHandle] = {}
        self._create_slots = asyncio.Semaphore(CREATE_CONCURRENCY)
        self._timer_store = TimerStore(sessions)
        self._podgroup_checked: dict[str, tuple[Any, ...]] = {}  # job uid -> what last agreed
        # Jobs that change phase together (a burst of Jobs, each one pod) share one transaction.
        self._phase_records = Batcher(self._write_phase_records)
        self._syncs = Coalescer(SYNC_COALESCE_SECONDS, self.resync, what="job sync")

    # -- entry points: one per kind of change ---------------------------------------------------

    async def job_changed(self, old: Json | None, new: Json | None) -> None:
        if new is None:
            await self._forget((old or {}).get("metadata", {}).get("uid", ""))
            return
        event = job_event(old, new)
        if event is not None:
            await self._drive(new["metadata"]["uid"], lambda _: event)

    async def pod_changed(self, job_uid: str, old: Json | None, new: Json | None) -> None:
        await self._drive(job_uid, lambda state: pod_event(old, new, state), coalesce_syncs=True)

    async def podgroup_changed(self, job_uid: str, old: Json | None, new: Json) -> None:
        event = podgroup_event(old, new)
        if event is not None:
            await self._drive(job_uid, lambda _: event)

    async def command_issued(self, job_uid: str, action: str) -> None:
        await self._drive(job_uid, lambda _: ev.CommandIssued(action))

    async def resync(self, job_uid: str) -> None:
        """Level-triggered repair: sync the job as if it were out of sync."""
        await self._drive(job_uid, lambda _: ev.OutOfSync())

    async def recover(self, job_uid: str) -> None:
        """At start: first what the job's pods did while the controller was away, then a resync."""
        job = self._cache.by_uid("Job", job_uid)
        if job is None:
            return
        for missed in missed_pod_events(self._cache.pods_owned_by(job_uid), self._observe(job)):
            await self._drive(job_uid, _always(missed))
        await self.resync(job_uid)

    # -- the transition -------------------------------------------------------------------------

    async def _drive(
        self,
        job_uid: str,
        classify: Callable[[JobState], ev.JobEvent | None],
        *,
        coalesce_syncs: bool = False,
    ) -> None:
        async with self._locks[job_uid]:
            job = self._cache.by_uid("Job", job_uid)
            if job is None:
                return
            state = self._observe(job)
            event = classify(state)
            if event is None:
                return
            if coalesce_syncs and _only_syncs(event, state):
                self._syncs.request(job_uid)
                return
            await self._transition(job, state, event)

    def _observe(self, job: Json) -> JobState:
        uid = job["metadata"]["uid"]
        podgroup = self._cache.get("PodGroup", (job["metadata"].get("namespace", ""), _podgroup_name(job)))
        state = observe_job(job, (), podgroup, self._timers[uid].values())
        return replace(state, pods=self._cache.pod_views_owned_by(uid))

    async def _transition(self, job: Json, state: JobState, event: ev.JobEvent) -> None:
        result = transition(state, event, self._clock.now())
        uid = state.uid
        self._timers[uid] = {t.key: t for t in result.state.timers}
        timer_changes = [e for e in result.effects if isinstance(e, fx.ScheduleTimer | fx.CancelTimer)]
        if timer_changes:
            # Recorded before anything is done, so a crash part-way still leaves the deadline.
            await self._timer_store.apply(uid, timer_changes, self._timers[uid])
        failures: list[str] = []
        for effect in result.effects:
            job = self._cache.by_uid("Job", uid) or job
            try:
                failures += await self._apply(job, effect)
            except ApiError as error:
                log.warning("effect failed", job=state.name, effect=type(effect).__name__, error=str(error))
                failures.append(str(error))
        if state.status.phase != result.state.status.phase:
            await self._record_phase(state, result.state)
        if isinstance(event, ev.TimerFired) and not any(
            isinstance(e, fx.ScheduleTimer) and e.key == event.key for e in result.effects
        ):
            # Only now, after its effects: a crash before this point fires it again at start.
            await self._timer_store.fired(uid, event.key, self._clock.now())
        if failures and not isinstance(event, ev.PodCreationFailed):
            follow_up = self._cache.by_uid("Job", uid)
            if follow_up is not None:
                await self._transition(
                    follow_up, self._observe(follow_up), ev.PodCreationFailed(tuple(failures))
                )

    async def _apply(self, job: Json, effect: fx.Effect) -> list[str]:
        meta = job["metadata"]
        namespace, name = meta.get("namespace", "default"), meta["name"]
        match effect:
            case fx.CreatePods():
                return await self._create_pods(job, effect)
            case fx.DeletePods():
                await asyncio.gather(*(self._delete_pod(namespace, pod) for pod in effect.names))
            case fx.EnsurePodGroup():
                await self._ensure_podgroup(job)
            case fx.DeletePodGroup():
                await self._kube.delete("PodGroup", namespace, effect.name)
            case fx.EnsurePluginResources():
                await self._ensure_plugins(job, effect)
            case fx.DeletePluginResources():
                await self._delete_plugins(job, effect)
            case fx.EnsurePVCs():
                await self._ensure_pvcs(job, effect)
            case fx.UpdateJobStatus():
                await self._kube.set_status("Job", namespace, name, effect.status)
            case fx.RecordEvent():
                await self._kube.record_event(
                    job, type_=effect.type, reason=effect.reason, message=effect.message
                )
            case fx.ScheduleTimer():
                self._arm(meta["uid"], effect.key, effect.at)
            case fx.CancelTimer():
                handle = self._handles.pop((meta["uid"], effect.key), None)
                if handle:
                    handle.cancel()
            case fx.DeleteJob():
                await self._kube.delete(
                    "Job", namespace, name, propagationPolicy="Foreground", preconditions={"uid": effect.uid}
                )
        return []

    async def _create_pods(self, job: Json, effect: fx.CreatePods) -> list[str]:
        podgroup = _podgroup_name(job)
        if is_redacted(job):
            # The cached Job lacks its env values (see cache.py): one read of the API's copy per
            # batch of pods, never per event, and never kept.
            meta = job["metadata"]
            full = await self._kube.get("Job", meta.get("namespace"), meta["name"])
            if full is None or (full.get("metadata") or {}).get("uid") != meta.get("uid"):
                return [f"{ref.name}: the Job is gone from the API" for ref in effect.pods]
            job = {**job, "spec": full.get("spec") or {}}

        async def create(ref: fx.PodRef) -> str | None:
            pod = build_pod(
                job,
                ref.task_index,
                ref.pod_index,
                podgroup,
                job_version=effect.job_version,
                retry_count=effect.retry_count,
            )
            async with self._create_slots:
                try:
                    await self._kube.create(pod)
                except ApiError as error:
                    return f"{ref.name}: {error}"
            metrics.pod_created(job, self._clock.now())
            return None

        results = await asyncio.gather(*(create(ref) for ref in effect.pods))
        await failpoints.hit("ctl.after_pod_create_before_status")
        return [r for r in results if r]

    async def _delete_pod(self, namespace: str, name: str) -> None:
        # Marked first, so that its deletion reads as our own doing (OutOfSync), not an eviction.
        await self._kube.patch("Pod", namespace, name, {"metadata": {"annotations": {OUT_OF_SYNC: "true"}}})
        await self._kube.delete("Pod", namespace, name)

    async def _ensure_podgroup(self, job: Json) -> None:
        priorities = {
            p["metadata"]["name"]: int(p.get("value") or 0) for p in self._cache.all("PriorityClass")
        }
        existing = self._cache.get("PodGroup", (job["metadata"].get("namespace", ""), _podgroup_name(job)))
        # Every pod change of a job syncs it; its PodGroup only needs another look when the job,
        # the PodGroup or a priority changed since the last one agreed.
        checked = (
            job["metadata"].get("resourceVersion"),
            _version(existing),
            tuple(sorted(priorities.items())),
        )
        if existing is not None and self._podgroup_checked.get(job["metadata"]["uid"]) == checked:
            return
        desired = build_podgroup(job, priorities)
        if existing is None:
            await self._kube.create(desired)
            return
        self._podgroup_checked[job["metadata"]["uid"]] = checked
        patch = podgroup_needs_update(existing, desired)
        if patch:
            await self._kube.patch(
                "PodGroup", existing["metadata"].get("namespace"), existing["metadata"]["name"], patch
            )

    async def _ensure_plugins(self, job: Json, effect: fx.EnsurePluginResources) -> None:
        namespace = job["metadata"].get("namespace", "default")
        keyless = tuple(p for p in effect.plugins if p != ssh.NAME)
        for obj in plugin_objects(job, None, keyless):
            created = await self._kube.create(obj)
            if created is None and effect.refresh and obj["kind"] == "ConfigMap":
                await self._kube.patch(
                    "ConfigMap", namespace, obj["metadata"]["name"], {"data": obj.get("data")}
                )
        if ssh.NAME in effect.plugins:
            for _, name in plugin_object_names(job, [ssh.NAME]):
                await self._ensure_ssh_secret(job, namespace, name)

    async def _ensure_ssh_secret(self, job: Json, namespace: str, name: str) -> None:
        """Create the ssh plugin's Secret unless it exists. A key pair is drawn only then, and off
        the event loop: a 2048-bit RSA key takes 0.4 to 1.3 s of CPU on a busy two-core machine."""
        existing = await self._kube.get("Secret", namespace, name)
        conflict = secret_conflict(existing, job)
        if conflict:
            await self._kube.record_event(job, type_="Warning", reason="PluginError", message=conflict)
            return
        if existing is not None:
            return
        keys = ssh.user_key_pair(plugin_args(job, ssh.NAME) or []) or await asyncio.to_thread(
            generate_key_pair
        )
        for obj in plugin_objects(job, keys, [ssh.NAME]):
            await self._kube.create(obj)

    async def _delete_plugins(self, job: Json, effect: fx.DeletePluginResources) -> None:
        namespace = job["metadata"].get("namespace", "default")
        uid = job["metadata"]["uid"]
        for kind, name in plugin_object_names(job, effect.plugins):
            existing = await self._kube.get(kind, namespace, name)
            owners = (existing or {}).get("metadata", {}).get("ownerReferences") or []
            if existing is not None and any(o.get("uid") == uid for o in owners):
                await self._kube.delete(kind, namespace, name)

    async def _ensure_pvcs(self, job: Json, effect: fx.EnsurePVCs) -> None:
        namespace = job["metadata"].get("namespace", "default")
        for index, volume in enumerate((job.get("spec") or {}).get("volumes") or []):
            claim = volume.get("volumeClaimName")
            if claim and volume.get("volumeClaim") is not None:
                await self._kube.create(build_pvc(job, index, claim))
            elif claim and await self._kube.get("PersistentVolumeClaim", namespace, claim) is None:
                await self._kube.record_event(
                    job,
                    type_="Warning",
                    reason="PVCError",
                    message=f"pvc {claim} is not found, "
                    "the job will be in the Pending state until the PVC is created",
                )

    # -- timers -----------------------------------------------------------------------------------

    def _arm(self, job_uid: str, key: str, at: Any) -> None:
        previous = self._handles.pop((job_uid, key), None)
        if previous:
            previous.cancel()
        delay = max(0.0, (at - self._clock.now()).total_seconds())
        loop = asyncio.get_running_loop()

        def fire() -> None:
            self._handles.pop((job_uid, key), None)
            task = loop.create_task(self._drive(job_uid, lambda _: ev.TimerFired(key)))
            task.add_done_callback(_log_failure)

        self._handles[(job_uid, key)] = loop.call_later(delay, fire)

    async def _forget(self, job_uid: str) -> None:
        for key in [k for k in self._handles if k[0] == job_uid]:
            self._handles.pop(key).cancel()
        self._timers.pop(job_uid, None)
        self._locks.pop(job_uid, None)
        self._podgroup_checked.pop(job_uid, None)
        await self._timer_store.forget(job_uid)

    async def restore_timers(self) -> None:
        """At start, before the first resync: re-arm every stored deadline of a job that still
        exists (one already past fires at once), and drop those of jobs deleted meanwhile."""
        for stored in await self._timer_store.load():
            if self._cache.by_uid("Job", stored.job_uid) is None:
                await self._timer_store.forget(stored.job_uid)
                continue
            if stored.delayed is not None:
                self._timers[stored.job_uid][stored.key] = stored.delayed
            self._arm(stored.job_uid, stored.key, stored.due)

    # -- phase records ------------------------------------------------------------------------------

    async def _record_phase(self, before: JobState, after: JobState) -> None:
        phase = str(after.status.phase)
        data = JobPhaseChanged(
            namespace=after.namespace,
            name=after.name,
            uid=after.uid,
            previous=str(before.status.phase) or None,
            phase=phase,
            reason=after.status.reason or "",
            message=after.status.message or "",
            retry_count=after.status.retry_count,
        )
        event_id = f"{after.uid}:{phase}:{after.status.version}:{after.status.retry_count}"
        audit = AuditRecorded(
            service="controller",
            action="phase-changed",
            kind="Job",
            namespace=after.namespace,
            name=after.name,
            uid=after.uid,
            reason=data.reason,
            message=data.message,
            details={
                "previous": data.previous,
                "phase": phase,
                "retryCount": data.retry_count,
                "queue": after.queue,
            },
        )
        row: Json = {
            "uid": after.uid,
            "namespace": after.namespace,
            "name": after.name,
            "phase": phase,
            "retry_count": after.status.retry_count,
            "version": after.status.version,
            "state": {"timers": [t.key for t in after.timers]},
        }
        events: list[tuple[str, CloudEvent[Any]]] = [
            (
                subjects.job_event("phase", after.namespace, after.name),
                new_event(data, source=SOURCE, event_id=event_id, subject=f"{after.namespace}/{after.name}"),
            ),
            (
                subjects.audit("controller", "phase-changed", after.namespace, after.name),
                new_event(audit, source=SOURCE, event_id=f"audit:{event_id}"),
            ),
        ]
        await self._phase_records.submit((row, events))
        metrics.job_finished(phase, after.namespace, after.name, after.queue)

    async def _write_phase_records(self, records: list[_PhaseRecord]) -> list[None]:
        """The phase changes of jobs that moved together: one upsert and their announcements."""
        rows = {row["uid"]: row for row, _ in records}  # a job twice in one batch: its newest
        async with self._sessions() as session, session.begin():
            statement = insert(tables.JobRecord).values(list(rows.values()))
            await session.execute(
                statement.on_conflict_do_update(
                    index_elements=["uid"],
                    set_={c: statement.excluded[c] for c in _UPDATED_ON_CHANGE},
                )
            )
            announcements = [event for _, events in records for event in events]
            outbox.enqueue_many(session, tables.ControllerOutbox, announcements)
        self._on_committed()
        return [None] * len(records)


def _only_syncs(event: ev.JobEvent, state: JobState) -> bool:
    """Whether the event's whole transition is a sync of the job: the controller's own events
    match no user policy, and a Running pod changes nothing else unless a delayed action waits
    on that pod (its start cancels it)."""
    if isinstance(event, ev.OutOfSync):
        return True
    return isinstance(event, ev.PodRunning) and state.timer(event.pod) is None


def _version(obj: Json | None) -> str | None:
    return None if obj is None else (obj.get("metadata") or {}).get("resourceVersion")


def _always(event: ev.JobEvent) -> Callable[[JobState], ev.JobEvent]:
    return lambda _: event


def _podgroup_name(job: Json) -> str:
    return f"{job['metadata']['name']}-{job['metadata']['uid']}"


def _log_failure(task: asyncio.Task[None]) -> None:
    with contextlib.suppress(asyncio.CancelledError):
        if task.exception():
            log.error("timer handling failed", error=str(task.exception()))
