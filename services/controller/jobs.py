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
announced on `jobs.*` and `audit.*` through the controller's outbox, in one transaction
(job_phase_records.py). The Job's PodGroup, plugin objects and PVCs are made and removed by
job_resources.py.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.controller import metrics
from services.controller.cache import Cache
from services.controller.coalesce import Coalescer
from services.controller.core import effects as fx
from services.controller.core import events as ev
from services.controller.core.jobstate import DelayedAction, ObservedJob
from services.controller.core.lifecycle import only_syncs, transition
from services.controller.core.observe import (
    job_event,
    missed_pod_events,
    observe_job,
    pod_event,
    podgroup_event,
)
from services.controller.core.pods import build_pod
from services.controller.job_phase_records import JobPhaseRecords
from services.controller.job_resources import JobResources, podgroup_name
from services.controller.kube_writes import KubeWrites
from services.controller.timers import TimerStore
from shared import failpoints
from shared.clock import Clock
from shared.kube.client import ApiError
from shared.volcano.keys import OUT_OF_SYNC
from shared.volcano.objects import JobObject
from shared.volcano.redaction import is_redacted

log = structlog.get_logger()
Json = dict[str, Any]
CREATE_CONCURRENCY = 32
# How long a job's plain syncs wait for the rest of their burst before one of them runs.
SYNC_COALESCE_SECONDS = 0.05


class JobDriver:
    def __init__(
        self,
        cache: Cache,
        kube: KubeWrites,
        sessions: async_sessionmaker[AsyncSession],
        *,
        clock: Clock,
        on_committed: Callable[[], None],
        acts_for_job: Callable[[Json], bool] | None = None,
    ) -> None:
        self._cache = cache
        self._kube = kube
        self._clock = clock
        self._locks: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._timers: dict[str, dict[str, DelayedAction]] = defaultdict(dict)
        self._handles: dict[tuple[str, str], asyncio.TimerHandle] = {}
        self._create_slots = asyncio.Semaphore(CREATE_CONCURRENCY)
        self._timer_store = TimerStore(sessions)
        self._resources = JobResources(cache, kube)
        self._phase_records = JobPhaseRecords(sessions, on_committed=on_committed)
        self._syncs = Coalescer(SYNC_COALESCE_SECONDS, self.resync, what="job sync")
        # A sharded replica drives only the jobs of its shards (shard_leases.py); timers and
        # coalesced syncs of a job whose shard moved away end here.
        self.acts_for_job: Callable[[Json], bool] = acts_for_job or _every_job

    # -- entry points: one per kind of change ---------------------------------------------------

    async def job_changed(self, old: Json | None, new: Json | None) -> None:
        if new is None:
            await self._forget(JobObject(old or {}).uid)
            return
        event = job_event(old, new)
        if event is not None:
            await self._drive(JobObject(new).uid, lambda _: event)

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
        classify: Callable[[ObservedJob], ev.JobEvent | None],
        *,
        coalesce_syncs: bool = False,
    ) -> None:
        async with self._locks[job_uid]:
            job = self._cache.by_uid("Job", job_uid)
            if job is None or not self.acts_for_job(job):
                return
            state = self._observe(job)
            event = classify(state)
            if event is None:
                return
            if coalesce_syncs and only_syncs(state, event):
                self._syncs.request(job_uid)
                return
            await self._transition(job, state, event)

    def _observe(self, job: Json) -> ObservedJob:
        view = JobObject(job)
        uid = view.uid
        podgroup = self._cache.get("PodGroup", (view.namespace, podgroup_name(job)))
        state = observe_job(job, (), podgroup, self._timers[uid].values())
        return replace(state, pods=self._cache.pod_views_owned_by(uid))

    async def _transition(self, job: Json, state: ObservedJob, event: ev.JobEvent) -> None:
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
        view = JobObject(job)
        namespace, name = view.namespace or "default", view.name
        match effect:
            case fx.CreatePods():
                return await self._create_pods(job, effect)
            case fx.DeletePods():
                await asyncio.gather(*(self._delete_pod(namespace, pod) for pod in effect.names))
            case fx.EnsurePodGroup():
                await self._resources.ensure_podgroup(job)
            case fx.DeletePodGroup():
                await self._kube.delete("PodGroup", namespace, effect.name)
            case fx.EnsurePluginResources():
                await self._resources.ensure_plugins(job, effect)
            case fx.DeletePluginResources():
                await self._resources.delete_plugins(job, effect)
            case fx.EnsurePVCs():
                await self._resources.ensure_pvcs(job, effect)
            case fx.UpdateJobStatus():
                await self._kube.set_status("Job", namespace, name, effect.status)
            case fx.RecordEvent():
                await self._kube.record_event(
                    job, type_=effect.type, reason=effect.reason, message=effect.message
                )
            case fx.ScheduleTimer():
                self._arm(view.uid, effect.key, effect.at)
            case fx.CancelTimer():
                handle = self._handles.pop((view.uid, effect.key), None)
                if handle:
                    handle.cancel()
            case fx.DeleteJob():
                await self._kube.delete(
                    "Job", namespace, name, propagationPolicy="Foreground", preconditions={"uid": effect.uid}
                )
        return []

    async def _create_pods(self, job: Json, effect: fx.CreatePods) -> list[str]:
        podgroup = podgroup_name(job)
        if is_redacted(job):
            # The cached Job lacks its env values (see cache.py): one read of the API's copy per
            # batch of pods, never per event, and never kept.
            view = JobObject(job)
            full = await self._kube.get("Job", view.namespace, view.name)
            if full is None or JobObject(full).uid != view.uid:
                return [f"{ref.name}: the Job is gone from the API" for ref in effect.pods]
            job = {**job, "spec": full.get("spec") or {}}

        async def create(ref: fx.DesiredPod) -> str | None:
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
        self._resources.forget(job_uid)
        await self._timer_store.forget(job_uid)

    async def restore_timers(self) -> None:
        """At start, before the first resync: re-arm every stored deadline of a job that still
        exists (one already past fires at once), and drop those of jobs deleted meanwhile."""
        for stored in await self._timer_store.load():
            job = self._cache.by_uid("Job", stored.job_uid)
            if job is None:
                await self._timer_store.forget(stored.job_uid)
                continue
            if not self.acts_for_job(job):  # another replica's: re-armed when its shard comes here
                continue
            if stored.delayed is not None:
                self._timers[stored.job_uid][stored.key] = stored.delayed
            self._arm(stored.job_uid, stored.key, stored.due)

    # -- phase records ------------------------------------------------------------------------------

    async def _record_phase(self, before: ObservedJob, after: ObservedJob) -> None:
        await self._phase_records.record(before, after)
        metrics.job_finished(str(after.status.phase), after.namespace, after.name, after.queue)


def _always(event: ev.JobEvent) -> Callable[[ObservedJob], ev.JobEvent]:
    return lambda _: event


def _log_failure(task: asyncio.Task[None]) -> None:
    with contextlib.suppress(asyncio.CancelledError):
        if task.exception():
            log.error("timer handling failed", error=str(task.exception()))


def _every_job(job: Json) -> bool:
    return True
