"""The simulated apiserver's storage: every object in memory, one resourceVersion counter.

The HTTP layer, the kubelets and the control API all write through this class, so each write
gets the next cluster-wide resourceVersion, lands in the watch history and reaches every
subscriber in commit order (a subscriber that writes while being notified is queued behind the
event it reacts to). Objects are plain dicts and are never mutated once stored: a write stores
a new dict, so events and list answers can share them safely. Time comes from an injected clock.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import orjson

from services.simulator.store import deletion, errors
from services.simulator.store.api_resources import KINDS, NAMESPACES, PODS, Kind
from services.simulator.store.history import History, WatchEvent
from services.simulator.store.object_rules import object_causes, too_large
from services.simulator.store.owners import OwnerGraph
from services.simulator.store.selectors import EVERYTHING, Selector
from services.simulator.store.validation import apply_defaults, validate
from shared.volcano.schema import shown

Listener = Callable[[WatchEvent], None]
ObjectKey = tuple[Kind, str, str]
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def clone(obj: Any) -> Any:
    """A deep copy, through orjson because it is several times faster than copy.deepcopy."""
    return orjson.loads(orjson.dumps(obj))


def timestamp(moment: datetime) -> str:
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}Z"
    )


def _spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


class Store(OwnerGraph):
    def __init__(self, clock: Callable[[], datetime], history_size: int = 50_000) -> None:
        self._clock = clock
        self._resource_version = 0
        self._objects: dict[Kind, dict[str, dict[str, dict[str, Any]]]] = {k: {} for k in KINDS}
        self._history = History(history_size)
        self._owners_of: dict[str, set[tuple[Kind, str, str, str]]] = {}
        self._by_uid: dict[str, tuple[Kind, str, str]] = {}
        self._listeners: dict[Kind | None, list[Listener]] = {}
        self._undelivered: deque[WatchEvent] = deque()
        self._delivering = False
        self._name_counter = 0
        for name in INITIAL_NAMESPACES:
            self.create(NAMESPACES, {"metadata": {"name": name}})

    # -- reading ---------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        return self._resource_version

    def find(self, kind: Kind, namespace: str, name: str) -> dict[str, Any] | None:
        return self._objects[kind].get(namespace if kind.namespaced else "", {}).get(name)

    def get(self, kind: Kind, namespace: str, name: str) -> dict[str, Any]:
        obj = self.find(kind, namespace, name)
        if obj is None:
            raise errors.not_found(kind.plural, kind.group, name)
        return obj

    def is_empty(self, kind: Kind) -> bool:
        return not any(self._objects[kind].values())

    def iterate(self, kind: Kind, namespace: str | None = None) -> Iterator[dict[str, Any]]:
        """Every object of `kind`, in one namespace or (None) in all of them."""
        buckets = self._objects[kind]
        if namespace is not None and kind.namespaced:
            yield from list(buckets.get(namespace, {}).values())
            return
        for bucket in list(buckets.values()):
            yield from list(bucket.values())

    def select(
        self,
        kind: Kind,
        namespace: str | None = None,
        labels: Selector = EVERYTHING,
        fields: Selector = EVERYTHING,
    ) -> list[dict[str, Any]]:
        return [
            obj
            for obj in self.iterate(kind, namespace)
            if (labels.empty or labels.matches_labels(obj["metadata"].get("labels")))
            and (fields.empty or fields.matches_fields(obj))
        ]

    def events_since(self, kind: Kind, resource_version: int) -> list[WatchEvent]:
        return self._history.since(kind, resource_version)

    def subscribe(self, kind: Kind | None, listener: Listener) -> Callable[[], None]:
        """Call `listener` with every committed event of `kind` (None: every kind)."""
        self._listeners.setdefault(kind, []).append(listener)
        return lambda: self._listeners[kind].remove(listener)

    # -- creating --------------------------------------------------------------------------

    def prepare_create(self, kind: Kind, body: dict[str, Any], namespace: str = "") -> dict[str, Any]:
        """The object as it will be stored, before admission: defaults, name, uid, timestamps."""
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        obj: dict[str, Any] = clone(body)
        obj["apiVersion"], obj["kind"] = kind.api_version, kind.kind
        metadata = obj.get("metadata")
        if not isinstance(metadata, dict):
            metadata = obj["metadata"] = {}
        if kind.namespaced:
            given = metadata.get("namespace")
            if namespace and given and given != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            metadata["namespace"] = namespace or given or "default"
            if self.find(NAMESPACES, "", metadata["namespace"]) is None:
                raise errors.not_found("namespaces", "", metadata["namespace"])
        else:
            metadata.pop("namespace", None)
        if not metadata.get("name") and metadata.get("generateName"):
            metadata["name"] = self._generated_name(metadata["generateName"])
        for system_field in ("resourceVersion", "deletionTimestamp", "managedFields"):
            metadata.pop(system_field, None)
        metadata["uid"] = str(uuid.uuid4())
        metadata["creationTimestamp"] = timestamp(self._clock())
        metadata["generation"] = 1
        # Shapes first: the defaults below (like a typed decoder) assume a Pod's containers are a list.
        if causes := object_causes(kind.kind, obj):
            raise errors.invalid(kind.kind, kind.group, shown(metadata.get("name") or ""), causes)
        apply_defaults(kind, obj)
        return obj

    def _generated_name(self, prefix: str) -> str:
        # Five characters from a counter, as unique as the apiserver's random suffix and
        # reproducible from one run to the next.
        self._name_counter += 1
        alphabet = "bcdfghjklmnpqrstvwxz2456789"
        n, suffix = self._name_counter * 7919, ""
        for _ in range(5):
            n, digit = divmod(n, len(alphabet))
            suffix += alphabet[digit]
        return f"{prefix}{suffix}"

    def validate(self, kind: Kind, obj: dict[str, Any]) -> None:
        causes = validate(kind, obj)
        if causes:
            name = shown(obj["metadata"].get("name", ""))
            raise errors.invalid(kind.kind, kind.group, name, causes)
        if too_large(obj):  # what etcd would refuse to store
            raise errors.ApiError(413, "RequestEntityTooLarge", "etcdserver: request is too large")

    def insert(self, kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a prepared, admitted object; 409 AlreadyExists when the name is taken."""
        metadata = obj["metadata"]
        namespace, name = metadata.get("namespace", ""), metadata["name"]
        bucket = self._objects[kind].setdefault(namespace, {})
        if name in bucket:
            raise errors.already_exists(kind.plural, kind.group, name)
        if kind.namespaced and self.find(NAMESPACES, "", namespace) is None:
            raise errors.not_found("namespaces", "", namespace)
        metadata["resourceVersion"] = str(self._next_version())
        bucket[name] = obj
        self._by_uid[metadata["uid"]] = (kind, namespace, name)
        self._track_owners(kind, None, obj)
        self._commit("ADDED", kind, obj, None)
        self._collect_if_dangling(kind, obj)
        return obj

    def check_insert(self, kind: Kind, obj: dict[str, Any]) -> None:
        """What `insert` would refuse (a dry run): 409 when the name is taken, 404 without the namespace."""
        metadata = obj["metadata"]
        if self.find(kind, metadata.get("namespace", ""), metadata["name"]) is not None:
            raise errors.already_exists(kind.plural, kind.group, metadata["name"])
        if kind.namespaced and self.find(NAMESPACES, "", metadata.get("namespace", "")) is None:
            raise errors.not_found("namespaces", "", metadata.get("namespace", ""))

    def create(self, kind: Kind, body: dict[str, Any], namespace: str = "") -> dict[str, Any]:
        """Create without admission (the simulator's own writes and tests)."""
        obj = self.prepare_create(kind, body, namespace)
        self.validate(kind, obj)
        return self.insert(kind, obj)

    # -- updating --------------------------------------------------------------------------

    def prepare_update(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        body: dict[str, Any],
        *,
        status_only: bool = False,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """(new, old) for an update of the object or its status subresource, before admission.

        409 when the body names a resourceVersion other than the stored one. The main resource
        keeps the stored status and the status subresource keeps everything but the status,
        for kinds that have one, as the apiserver does.
        """
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        old = self.get(kind, namespace, name)
        given = body.get("metadata")
        metadata: dict[str, Any] = given if isinstance(given, dict) else {}
        if metadata.get("name") not in (None, name):
            raise errors.bad_request(
                f"the name of the object ({metadata['name']}) does not match the name on the URL ({name})"
            )
        wanted = metadata.get("resourceVersion")
        if wanted and wanted != old["metadata"]["resourceVersion"]:
            raise errors.conflict(kind.plural, kind.group, name, errors.STALE_OBJECT)
        if status_only:
            new = {**old, "status": clone(body.get("status"))}
            new["metadata"] = dict(old["metadata"])
        else:
            new = clone(body)
            new["apiVersion"], new["kind"] = kind.api_version, kind.kind
            new_metadata = new["metadata"] = dict(new.get("metadata") or {})
            for kept in (
                "name",
                "namespace",
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
            ):
                if kept in old["metadata"]:
                    new_metadata[kept] = old["metadata"][kept]
                else:
                    new_metadata.pop(kept, None)
            if kind.has_status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            generation = old["metadata"].get("generation", 1)
            if _spec_part(new) != _spec_part(old):
                generation += 1
            new_metadata["generation"] = generation
        return new, old

    def replace(self, kind: Kind, new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
        """Store `new` in place of `old`; 409 if the object changed since `old` was read."""
        # The stored object gets metadata of its own: callers build `new` from dicts they still hold
        # (`{**node, "spec": ...}`), and stamping the version into a shared dict would rewrite an
        # object already handed to watchers.
        new = {**new, "metadata": dict(new["metadata"])}
        metadata = new["metadata"]
        namespace, name = metadata.get("namespace", ""), metadata["name"]
        current = self.get(kind, namespace, name)
        if current["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise errors.conflict(kind.plural, kind.group, name, errors.STALE_OBJECT)
        if deletion.ready_to_remove(metadata):
            # The last finalizer is gone (and no grace period runs): the deletion completes now.
            self._remove(kind, current)
            return current
        metadata["resourceVersion"] = str(self._next_version())
        self._objects[kind][namespace][name] = new
        self._track_owners(kind, old, new)
        self._commit("MODIFIED", kind, new, old)
        if metadata.get("ownerReferences") != old["metadata"].get("ownerReferences"):
            self._collect_if_dangling(kind, new)
        return new

    def check_replace(self, kind: Kind, new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
        """What `replace` would store (a dry run), at the stored resourceVersion; 409 if stale."""
        metadata = new["metadata"]
        current = self.get(kind, metadata.get("namespace", ""), metadata["name"])
        if current["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise errors.conflict(kind.plural, kind.group, metadata["name"], errors.STALE_OBJECT)
        return {**new, "metadata": {**metadata, "resourceVersion": current["metadata"]["resourceVersion"]}}

    def update(self, kind: Kind, new: dict[str, Any]) -> dict[str, Any]:
        """Write a whole new version of a stored object (the simulator's own status writes)."""
        metadata = new["metadata"]
        old = self.get(kind, metadata.get("namespace", ""), metadata["name"])
        return self.replace(kind, new, old)

    # -- deleting --------------------------------------------------------------------------

    def delete(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        *,
        propagation: str = "Background",
        uid: str | None = None,
        grace_seconds: int | None = 0,
    ) -> dict[str, Any]:
        """Delete, or mark for deletion when finalizers, a foreground propagation or a pod's
        grace period make it wait (deletion.py); `grace_seconds` None: the kind's default."""
        obj = self.get(kind, namespace, name)
        metadata = obj["metadata"]
        if uid and metadata["uid"] != uid:
            raise errors.conflict(
                kind.plural,
                kind.group,
                name,
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {metadata['uid']}",
            )
        grace = deletion.pod_grace(obj, grace_seconds) if kind is PODS else 0
        if metadata.get("deletionTimestamp"):
            shorter = deletion.shortened(obj, self._clock(), grace) if kind is PODS else None
            if shorter is None:
                return obj
            return self.replace(kind, shorter, obj)
        finalizers = list(metadata.get("finalizers") or [])
        if propagation == "Orphan":
            self._orphan_dependents(metadata["uid"])
        elif (
            propagation == "Foreground"
            and self._dependents(metadata["uid"])
            and deletion.FOREGROUND not in finalizers
        ):
            finalizers.append(deletion.FOREGROUND)
        if not finalizers and not grace:
            return self._remove(kind, obj)
        stored = self.replace(kind, deletion.marked(obj, self._clock(), grace, finalizers), obj)
        if deletion.FOREGROUND in finalizers:
            self._delete_dependents(metadata["uid"])
            stored = self.find(kind, namespace, name) or stored
        return stored

    def _remove(self, kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
        metadata = obj["metadata"]
        namespace, name = metadata.get("namespace", ""), metadata["name"]
        del self._objects[kind][namespace][name]
        self._by_uid.pop(metadata["uid"], None)
        self._track_owners(kind, obj, None)
        # A DELETED event carries the object as last stored, at a new resourceVersion.
        gone_obj = {**obj, "metadata": {**metadata, "resourceVersion": str(self._next_version())}}
        self._commit("DELETED", kind, gone_obj, obj)
        if kind is NAMESPACES:
            for other in KINDS:
                if other.namespaced:
                    for dependent in list(self._objects[other].get(name, {}).values()):
                        self._remove(other, dependent)
        self._collect_dependents(metadata["uid"])
        for reference in metadata.get("ownerReferences") or []:
            self._finish_foreground(reference.get("uid"))
        return gone_obj

    # -- the change feed -------------------------------------------------------------------

    def _next_version(self) -> int:
        self._resource_version += 1
        return self._resource_version

    def _commit(self, type_: str, kind: Kind, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        event = WatchEvent(int(obj["metadata"]["resourceVersion"]), type_, kind, obj, old)
        self._history.append(event)
        self._undelivered.append(event)
        if self._delivering:
            return
        self._delivering = True
        try:
            while self._undelivered:
                pending = self._undelivered.popleft()
                for listener in (
                    *self._listeners.get(pending.kind, ()),
                    *self._listeners.get(None, ()),
                ):
                    listener(pending)
        finally:
            self._delivering = False
