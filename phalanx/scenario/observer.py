"""What happened during a scenario, as opposed to what holds now: watched in the background.

Started right after the stack's reset, the observer lists and then watches pods, Volcano Jobs,
PodGroups and Events. It remembers when each Job first had minAvailable pods Running (for
`startedBefore`), every pod that was evicted (a DisruptionTarget or Evicted mark, an Evict or
Preempted Event, or an `evict` step), and which PodGroup each Job owned (so `podgroups: {job}`
still names it after the Job is gone). Times are seconds since the scenario began.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from phalanx.scenario.kube import Kube, KubeError
from phalanx.scenario.objects import (
    evicted_pod_uid,
    job_reached_running,
    key_of,
    labels_of,
    shows_eviction,
    uid_of,
)
from shared.volcano.keys import JOB_NAME as JOB_NAME_LABEL

Obj = dict[str, Any]
WATCHED_KINDS = ("Pod", "Job", "PodGroup", "Event")
_WATCH_SECONDS = 5


class Observer:
    def __init__(self, kube: Kube, clock: Callable[[], float]) -> None:
        self._kube, self._clock = kube, clock
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._synced = {kind: threading.Event() for kind in WATCHED_KINDS}
        self._threads: list[threading.Thread] = []
        self._live_pods: dict[str, Obj] = {}  # by uid
        self._seen_pods: dict[str, Obj] = {}  # by uid, last state, deleted ones too
        self._latest_uids: dict[tuple[str, str], str] = {}  # by (namespace, name), gone or not
        self._evicted: dict[str, Obj] = {}  # by uid
        self._evicted_unseen: set[str] = set()  # uids an Event named before the pod was seen
        self._jobs: dict[tuple[str, str], Obj] = {}
        self._started: dict[tuple[str, str], float] = {}
        self._job_podgroups: dict[tuple[str, str], str] = {}

    # -- life ----------------------------------------------------------------------------------

    def start(self, sync_timeout: float = 30.0) -> None:
        for kind in WATCHED_KINDS:
            thread = threading.Thread(
                target=self._follow, args=(kind,), name=f"scenario-watch-{kind}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        for kind in WATCHED_KINDS:
            self._synced[kind].wait(sync_timeout)

    def stop(self) -> None:
        """Stop recording now; each watch thread ends by itself within its watch timeout."""
        self._stopped.set()
        with self._lock:  # a late event can no longer change what the scenario saw
            self._jobs, self._live_pods = {}, {}

    def _follow(self, kind: str) -> None:
        while not self._stopped.is_set():
            try:
                items, version = self._kube.list_with_version(kind)
                with self._lock:
                    self._relisted(kind, items)
                self._synced[kind].set()
                while not self._stopped.is_set():
                    for event_type, obj in self._kube.watch(kind, version, _WATCH_SECONDS):
                        version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                        if self._stopped.is_set():
                            return
                        if event_type in ("ADDED", "MODIFIED", "DELETED"):
                            with self._lock:
                                self._changed(kind, event_type, obj)
            except KubeError as error:
                if error.status == 404 and not self._synced[kind].is_set():
                    self._synced[kind].set()  # a cluster without this kind: nothing to observe
                    return
                self._stopped.wait(0.5)  # 410 Gone or a dropped connection: list again
            except Exception:  # the client's own failures (bad chunk, reset): list again
                self._stopped.wait(0.5)

    # -- keeping the record (under the lock) ----------------------------------------------------

    def _relisted(self, kind: str, items: list[Obj]) -> None:
        if kind == "Pod":
            self._live_pods = {}
        for obj in items:
            self._changed(kind, "ADDED", obj)

    def _changed(self, kind: str, event_type: str, obj: Obj) -> None:
        if kind == "Pod":
            self._pod_changed(event_type, obj)
        elif kind == "Job":
            key = key_of(obj)
            if event_type == "DELETED":
                self._jobs.pop(key, None)
            else:
                self._jobs[key] = obj
                self._check_started(key)
        elif kind == "PodGroup":
            for owner in (obj.get("metadata") or {}).get("ownerReferences") or []:
                if owner.get("kind") == "Job" and owner.get("name"):
                    self._job_podgroups[(key_of(obj)[0], owner["name"])] = key_of(obj)[1]
        elif kind == "Event":
            uid = evicted_pod_uid(obj)
            if uid is not None and uid in self._seen_pods:
                self._evicted.setdefault(uid, self._seen_pods[uid])
            elif uid is not None:  # the pod's own events may still be on their way
                self._evicted_unseen.add(uid)

    def _pod_changed(self, event_type: str, pod: Obj) -> None:
        uid = uid_of(pod)
        self._seen_pods[uid] = pod
        if event_type != "DELETED":
            self._latest_uids[key_of(pod)] = uid
        if shows_eviction(pod) or uid in self._evicted_unseen:
            self._evicted[uid] = pod
        if event_type == "DELETED":
            self._live_pods.pop(uid, None)
        else:
            self._live_pods[uid] = pod
        job = labels_of(pod).get(JOB_NAME_LABEL)
        if job:
            self._check_started((key_of(pod)[0], job))

    def _check_started(self, key: tuple[str, str]) -> None:
        job = self._jobs.get(key)
        if key in self._started or job is None:
            return
        if job_reached_running(job, list(self._live_pods.values())):
            self._started[key] = self._clock()

    # -- what the probes ask ----------------------------------------------------------------------

    def note_evicted(self, pod: Obj) -> None:
        """An `evict` step is about to evict this pod."""
        with self._lock:
            self._evicted[uid_of(pod)] = pod

    def evicted_pods(self) -> list[Obj]:
        with self._lock:
            return [self._seen_pods.get(uid, pod) for uid, pod in self._evicted.items()]

    def pod_uids(self) -> dict[tuple[str, str], str]:
        """The uid each pod name last had, including pods deleted since (for `recreated`)."""
        with self._lock:
            return dict(self._latest_uids)

    def job_started_at(self, namespace: str, name: str) -> float | None:
        with self._lock:
            return self._started.get((namespace, name))

    def podgroup_of_job(self, namespace: str, job: str) -> str | None:
        with self._lock:
            return self._job_podgroups.get((namespace, job))

    def remember_podgroup(self, namespace: str, job: str, podgroup: str) -> None:
        with self._lock:
            self._job_podgroups[(namespace, job)] = podgroup
