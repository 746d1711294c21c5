"""The controller's picture of the cluster: the latest version of each object it works on.

Primed from the API at start (level-triggered), then kept current from `cluster.*` events and from
the controller's own write responses. `put` refuses an older resourceVersion, so a replayed or
reordered event never moves an object backwards, nor brings back one deleted before the priming
list, and returns the version it replaced: the "old" that the lifecycle compares the new against.
A Job is held with its literal environment values redacted, whatever its source (the bus carries
it redacted, a list or a write response does not): a cached Job then compares equal with its
published echo, and no secret sits in the controller's memory. Pods are built from the API's copy.
When the reaction to a change fails, `undo` takes the change back, so its redelivery is handled
rather than dropped as stale.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Any

from services.controller.core.jobstate import PodView
from services.controller.core.observe import pod_view
from shared.volcano.objects import KubeObject, PodObject
from shared.volcano.redaction import redact_env

Json = dict[str, Any]
Key = tuple[str, str]  # (namespace, name); cluster-scoped objects use ""


def key_of(obj: Json) -> Key:
    return KubeObject(obj).key


def version_of(obj: Json) -> int:
    return KubeObject(obj).version


def controller_uid(obj: Json) -> str | None:
    return KubeObject(obj).controller_uid


class Cache:
    def __init__(self) -> None:
        self._objects: dict[str, dict[Key, Json]] = defaultdict(dict)
        self._tombstones: dict[tuple[str, str], int] = {}  # (kind, uid) -> version when deleted
        self._owned: dict[str, set[Key]] = defaultdict(set)  # owner uid -> pod keys
        self._grouped: dict[Key, set[Key]] = defaultdict(set)  # (ns, podgroup) -> pod keys
        self._by_uid: dict[str, dict[str, Key]] = defaultdict(dict)
        self._listed_at: dict[str, int] = {}  # kind -> resourceVersion of the priming list
        # The lifecycle's view of each pod, kept with the object it was made from: a job's state
        # is observed on every change of any of its pods, and re-parsing all of them each time
        # made a gang's cost grow with the square of its size.
        self._pod_views: dict[Key, tuple[Json, PodView]] = {}

    class Stale(Exception):
        """The event is older than what the cache holds."""

    def prime(self, kind: str, objects: list[Json], listed_version: int) -> None:
        """Fill from a list that was the whole truth at `listed_version`: an event no newer than
        that about an object the list did not hold describes one deleted before it (a replay)."""
        for obj in objects:
            with contextlib.suppress(Cache.Stale):
                self.put(kind, obj)
        self._listed_at[kind] = listed_version

    def get(self, kind: str, key: Key) -> Json | None:
        return self._objects[kind].get(key)

    def all(self, kind: str) -> list[Json]:
        return list(self._objects[kind].values())

    def put(self, kind: str, obj: Json) -> Json | None:
        """Store `obj` unless an equal or newer version is held; returns the replaced version.

        Raises `Cache.Stale` when `obj` is not newer, so callers skip their reaction to it.
        """
        view = PodObject(obj)  # any kind: a PodObject only adds what a pod is indexed by
        key, uid, version = view.key, view.uid, view.version
        held = self._objects[kind].get(key)
        held_view = None if held is None else PodObject(held)
        if kind == "Job":
            redact_env(obj)
        if held_view is not None and held_view.version >= version:
            raise Cache.Stale()
        if held is None and self._tombstones.get((kind, uid), -1) >= version:
            raise Cache.Stale()
        if held is None and self._listed_at.get(kind, -1) >= version:
            raise Cache.Stale()
        self._objects[kind][key] = obj
        self._by_uid[kind][uid] = key
        if kind == "Pod":
            self._index_pod(key, held_view, view)
        return held

    def remove(self, kind: str, obj: Json) -> Json | None:
        view = KubeObject(obj)
        key, uid = view.key, view.uid
        held = self._objects[kind].get(key)
        if held is not None and KubeObject(held).uid != uid:
            raise Cache.Stale()  # a newer object of the same name replaced it
        self._tombstones[(kind, uid)] = view.version
        if held is None:
            raise Cache.Stale()
        del self._objects[kind][key]
        self._by_uid[kind].pop(uid, None)
        if kind == "Pod":
            self._index_pod(key, PodObject(held), None)
            self._pod_views.pop(key, None)
        return held

    def undo(self, kind: str, obj: Json, old: Json | None, *, deleted: bool) -> None:
        """Take back a `put` (or `remove`) of `obj` whose reaction failed, so that the event's
        redelivery is news again; left alone when something newer came meanwhile."""
        view = KubeObject(obj)
        key, uid = view.key, view.uid
        held = self._objects[kind].get(key)
        if deleted:
            if held is not None or old is None:
                return
            self._tombstones.pop((kind, uid), None)
            self._objects[kind][key] = old
            self._by_uid[kind][uid] = key
            if kind == "Pod":
                self._index_pod(key, None, PodObject(old))
            return
        if held is not obj:
            return
        if old is None:
            del self._objects[kind][key]
            self._by_uid[kind].pop(uid, None)
        else:
            self._objects[kind][key] = old
            self._by_uid[kind][KubeObject(old).uid] = key
        if kind == "Pod":
            self._index_pod(key, PodObject(obj), None if old is None else PodObject(old))
            self._pod_views.pop(key, None)

    def _index_pod(self, key: Key, old: PodObject | None, new: PodObject | None) -> None:
        for pod, add in ((old, False), (new, True)):
            if pod is None:
                continue
            owner, group = pod.controller_uid, pod.group_name
            for index, index_key in ((self._owned, owner), (self._grouped, (key[0], group))):
                if index_key and index_key[-1]:
                    (index[index_key].add if add else index[index_key].discard)(key)  # type: ignore[index]

    def pods_owned_by(self, owner_uid: str) -> list[Json]:
        pods = self._objects["Pod"]
        return [pods[k] for k in self._owned.get(owner_uid, ()) if k in pods]

    def pod_views_owned_by(self, owner_uid: str) -> tuple[PodView, ...]:
        pods = self._objects["Pod"]
        views = []
        for key in self._owned.get(owner_uid, ()):
            pod = pods.get(key)
            if pod is None:
                continue
            held = self._pod_views.get(key)
            if held is None or held[0] is not pod:
                held = (pod, pod_view(pod))
                self._pod_views[key] = held
            views.append(held[1])
        return tuple(views)

    def pods_in_group(self, namespace: str, podgroup: str) -> list[Json]:
        pods = self._objects["Pod"]
        return [pods[k] for k in self._grouped.get((namespace, podgroup), ()) if k in pods]

    def by_uid(self, kind: str, uid: str) -> Json | None:
        key = self._by_uid[kind].get(uid)
        return self._objects[kind].get(key) if key else None
