"""Pure: read-only typed views over Kubernetes and Volcano objects as the API serves them (JSON).

Where an object enters a service (a watch event in the watcher, a `cluster.*` event or a list in
the controller, an AdmissionReview in admission, an event in the scheduler's ingest), the service
reads it through one of these views instead of walking `dict[str, Any]`:
`KubeObject(obj).namespace` rather than `(obj.get("metadata") or {}).get("namespace")`.

A view wraps the dict: it neither copies nor validates it (the pydantic models in `shared/volcano`
validate a whole manifest, which admission needs and the per-event paths cannot afford). Every shape
is tolerated as the dict walks it replaces tolerated it: a missing or malformed `metadata`, `spec`
or `status` reads as empty. The identity (name, namespace, uid) is looked up once, when the view is
made, into slots (a slot read is cheaper than a dict walk); the rest on access, each a Python call.
Making a view costs one Python object, about four single-field dict walks on CPython 3.11, so a view
is made once where the object enters and handed on, not re-made per field, and a mapping read often
(`view.spec`) is kept in a local (benchmarks/object_views.py measures it). A view is never written
through: patch bodies and new objects are built as dicts for the API, and `raw` is the object itself
for code that passes it on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from shared.domain.resources import Resources, pod_requests
from shared.volcano import keys

Json = Mapping[str, Any]
_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _mapping(value: object) -> Json:
    return value if isinstance(value, dict) else _EMPTY


def _list(value: object) -> Sequence[Any]:
    return value if isinstance(value, list) else ()


class KubeObject:
    """Any object: its metadata, and its `spec` and `status` as read-only mappings."""

    __slots__ = ("meta", "name", "namespace", "raw", "uid")

    raw: Json  # the object itself, for code that passes it on
    meta: Json
    name: str
    namespace: str  # "" for a cluster-scoped object
    uid: str

    def __init__(self, raw: Json) -> None:
        self.raw = raw
        meta = raw.get("metadata")
        if meta.__class__ is not dict:
            meta = _EMPTY
        self.meta = meta
        self.name = meta.get("name") or ""
        self.namespace = meta.get("namespace") or ""
        self.uid = meta.get("uid") or ""

    @property
    def labels(self) -> Mapping[str, str]:
        labels = self.meta.get("labels")
        return labels if labels.__class__ is dict else _EMPTY

    @property
    def annotations(self) -> Mapping[str, str]:
        annotations = self.meta.get("annotations")
        return annotations if annotations.__class__ is dict else _EMPTY

    @property
    def spec(self) -> Json:
        spec = self.raw.get("spec")
        return spec if spec.__class__ is dict else _EMPTY

    @property
    def status(self) -> Json:
        status = self.raw.get("status")
        return status if status.__class__ is dict else _EMPTY

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.kind} {self.namespace}/{self.name} uid={self.uid})"

    @property
    def kind(self) -> str:
        return str(self.raw.get("kind") or "")

    @property
    def key(self) -> tuple[str, str]:
        """(namespace, name): how caches and stores key an object ("" for cluster-scoped)."""
        return (self.namespace, self.name)

    def label(self, key: str, default: str = "") -> str:
        labels = self.meta.get("labels")
        return labels.get(key, default) if labels.__class__ is dict else default

    def annotation(self, key: str, default: str = "") -> str:
        annotations = self.meta.get("annotations")
        return annotations.get(key, default) if annotations.__class__ is dict else default

    @property
    def resource_version(self) -> str:
        return str(self.meta.get("resourceVersion") or "")

    @property
    def version(self) -> int:
        """resourceVersion as an integer (every API server in use gives etcd's); 0 when unreadable."""
        try:
            return int(self.meta.get("resourceVersion") or 0)
        except (TypeError, ValueError):
            return 0

    @property
    def generation(self) -> int:
        return int(self.meta.get("generation") or 0)

    @property
    def creation_timestamp(self) -> str | None:
        return self.meta.get("creationTimestamp") or None

    @property
    def deletion_timestamp(self) -> str | None:
        return self.meta.get("deletionTimestamp") or None

    @property
    def deleting(self) -> bool:
        return bool(self.meta.get("deletionTimestamp"))

    @property
    def owner_references(self) -> Sequence[Json]:
        return [ref for ref in _list(self.meta.get("ownerReferences")) if isinstance(ref, dict)]

    @property
    def controller_ref(self) -> Json | None:
        """The owner reference marked `controller`, if any."""
        for ref in _list(self.meta.get("ownerReferences")):
            if isinstance(ref, dict) and ref.get("controller"):
                return ref
        return None

    @property
    def controller_uid(self) -> str | None:
        for ref in _list(self.meta.get("ownerReferences")):
            if ref.__class__ is dict and ref.get("controller"):
                return str(ref.get("uid"))
        return None


class PodObject(KubeObject):
    """A Pod: where it runs, who schedules it, its gang, what it asks for."""

    __slots__ = ()

    @property
    def phase(self) -> str:
        status = self.raw.get("status")
        return (status.get("phase") or "") if status.__class__ is dict else ""

    @property
    def node_name(self) -> str:
        spec = self.raw.get("spec")
        return (spec.get("nodeName") or "") if spec.__class__ is dict else ""

    @property
    def scheduler_name(self) -> str:
        spec = self.raw.get("spec")
        return (spec.get("schedulerName") or "") if spec.__class__ is dict else ""

    @property
    def group_name(self) -> str:
        """The PodGroup it belongs to (`scheduling.k8s.io/group-name`), "" when none."""
        annotations = self.meta.get("annotations")
        return (annotations.get(keys.GROUP_NAME) or "") if annotations.__class__ is dict else ""

    @property
    def containers(self) -> Sequence[Json]:
        return [c for c in _list(self.spec.get("containers")) if isinstance(c, dict)]

    @property
    def init_containers(self) -> Sequence[Json]:
        return [c for c in _list(self.spec.get("initContainers")) if isinstance(c, dict)]

    @property
    def requests(self) -> Resources:
        """Its effective request as kube-scheduler computes it (`shared.domain.resources.pod_requests`)."""
        overhead = self.spec.get("overhead")
        return pod_requests(
            self.containers, self.init_containers, overhead if isinstance(overhead, dict) else None
        )

    @property
    def conditions(self) -> Sequence[Json]:
        return [c for c in _list(self.status.get("conditions")) if isinstance(c, dict)]

    @property
    def container_statuses(self) -> Sequence[Json]:
        return [s for s in _list(self.status.get("containerStatuses")) if isinstance(s, dict)]


class JobObject(KubeObject):
    """A Volcano Job (batch.volcano.sh), as far as the per-event paths read it."""

    __slots__ = ()

    @property
    def queue(self) -> str:
        return str(self.spec.get("queue") or "default")

    @property
    def min_available(self) -> int:
        return int(self.spec.get("minAvailable") or 0)

    @property
    def tasks(self) -> Sequence[Json]:
        return [t for t in _list(self.spec.get("tasks")) if isinstance(t, dict)]

    @property
    def plugins(self) -> Json:
        return _mapping(self.spec.get("plugins"))

    @property
    def phase(self) -> str:
        return str(_mapping(self.status.get("state")).get("phase") or "")


class PodGroupObject(KubeObject):
    """A Volcano PodGroup (scheduling.volcano.sh)."""

    __slots__ = ()

    @property
    def queue(self) -> str:
        return str(self.spec.get("queue") or "default")

    @property
    def min_member(self) -> int:
        return int(self.spec.get("minMember") or 0)

    @property
    def phase(self) -> str:
        return str(self.status.get("phase") or "")

    @property
    def conditions(self) -> Sequence[Json]:
        return [c for c in _list(self.status.get("conditions")) if isinstance(c, dict)]


class QueueObject(KubeObject):
    """A Volcano Queue (scheduling.volcano.sh), cluster-scoped."""

    __slots__ = ()

    @property
    def parent(self) -> str:
        return str(self.spec.get("parent") or "")

    @property
    def state(self) -> str:
        return str(self.status.get("state") or "")
