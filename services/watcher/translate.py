"""Pure: one object seen by a list or a watch → the `ObjectChanged` event to publish, or nothing.

Keeps what the consumers need and drops what they never read (`trim`), keys the event id on
uid, resourceVersion and change so that a re-watch republishes nothing new, and leaves out pods
that are neither ours nor occupying a node (another scheduler's pending pods concern nobody here).
`to_message` encodes the event and keeps it under the bus's payload limit: long annotations go
next, and an object still too large is published as a reference (its identity, `complete=False`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, cast

from services.watcher import trim
from shared.messages import envelope, subjects
from shared.messages.cluster import Change, ObjectChanged
from shared.messages.envelope import CloudEvent
from shared.volcano.keys import GROUP_NAME as GROUP_ANNOTATION
from shared.volcano.objects import KubeObject, PodObject

SOURCE = "phalanx/watcher"

SCHEDULER_CONF_MAP = "volcano-scheduler-configmap"
# Volcano's controller configuration: HyperNode discovery (networkTopologyDiscovery).
CONTROLLER_CONF_MAP = "volcano-controller-configmap"


def view_of(kind: str, obj: dict[str, Any]) -> KubeObject:
    """The view an observed object is read through, made once per event (shared/volcano/objects.py)."""
    return PodObject(obj) if kind == "Pod" else KubeObject(obj)


def is_relevant(kind: str, obj: KubeObject, scheduler_names: Collection[str]) -> bool:
    if isinstance(obj, PodObject):
        return (
            obj.scheduler_name in scheduler_names
            or GROUP_ANNOTATION in obj.annotations
            or bool(obj.node_name)
        )
    if kind == "ConfigMap":
        return obj.name in (SCHEDULER_CONF_MAP, CONTROLLER_CONF_MAP)
    return True


def to_event(
    kind: str,
    change: Change,
    view: KubeObject,
    *,
    relist_id: str | None = None,
) -> tuple[str, str, ObjectChanged]:
    """(subject, event id, data) for one observed object."""
    obj = _json(view)
    trimmed = trim.trim(kind, obj)
    namespace = view.namespace or None
    name = view.name
    if not name:
        raise ValueError("the object has no metadata.name")
    uid = view.uid or f"{namespace}/{name}"
    resource_version = view.version
    data = ObjectChanged(
        kind=kind,
        namespace=namespace,
        name=name,
        uid=uid,
        resource_version=resource_version,
        change=change,
        relist_id=relist_id,
        object=obj,
        trimmed=trimmed,
    )
    # A relist must reach the consumers even when the same version was published before (the
    # resync marker that follows deletes what the relist did not mention), so its ids are its own.
    suffix = f"relist:{relist_id}" if relist_id else change
    event_id = f"{uid}:{resource_version}:{suffix}"
    return subjects.cluster_object(kind, namespace, name), event_id, data


def _json(view: KubeObject) -> dict[str, Any]:
    """The object under the view: the API's JSON, which `trim` cuts in place before it is published."""
    return cast(dict[str, Any], view.raw)


@dataclass(frozen=True)
class Message:
    subject: str
    event_id: str
    payload: bytes
    data: ObjectChanged


def to_message(
    kind: str,
    change: Change,
    view: KubeObject,
    *,
    max_bytes: int,
    relist_id: str | None = None,
    traceparent: str | None = None,
) -> Message:
    """The event for one object, encoded, never over `max_bytes` (see the module's docstring).

    `traceparent` goes on the event as its tracing extension (shared/tracing.py)."""
    subject, event_id, data = to_event(kind, change, view, relist_id=relist_id)
    obj = _json(view)

    def new_event(data: ObjectChanged, *, source: str, event_id: str) -> CloudEvent[ObjectChanged]:
        return envelope.new_event(data, source=source, event_id=event_id, traceparent=traceparent)

    payload = new_event(data, source=SOURCE, event_id=event_id).to_bytes()
    if len(payload) > max_bytes and (cut := trim.trim_long_annotations(obj)):
        data = data.model_copy(update={"object": obj, "trimmed": [*data.trimmed, *cut]})
        payload = new_event(data, source=SOURCE, event_id=event_id).to_bytes()
    if len(payload) > max_bytes:
        identity = trim.reference(obj)
        data = data.model_copy(update={"object": identity, "complete": False, "trimmed": data.trimmed[:20]})
        payload = new_event(data, source=SOURCE, event_id=event_id).to_bytes()
    if len(payload) > max_bytes:  # thousands of labels: the bare identity is all that is left
        identity["metadata"] = {k: v for k, v in identity["metadata"].items() if k != "labels"}
        data = data.model_copy(update={"object": identity, "trimmed": []})
        payload = new_event(data, source=SOURCE, event_id=event_id).to_bytes()
    return Message(subject, event_id, payload, data)
