"""Pure: one object seen by a list or a watch → the `ObjectChanged` event to publish, or nothing.

Keeps what the consumers need and drops what they never read (managedFields), keys the event id on
uid, resourceVersion and change so that a re-watch republishes nothing new, and leaves out pods
that are neither ours nor occupying a node (another scheduler's pending pods concern nobody here).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from shared.messages import subjects
from shared.messages.cluster import Change, ObjectChanged

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
SCHEDULER_CONF_MAP = "volcano-scheduler-configmap"


def is_relevant(kind: str, obj: dict[str, Any], scheduler_names: Collection[str]) -> bool:
    if kind == "Pod":
        spec = obj.get("spec") or {}
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        return (
            spec.get("schedulerName") in scheduler_names
            or GROUP_ANNOTATION in annotations
            or bool(spec.get("nodeName"))
        )
    if kind == "ConfigMap":
        return (obj.get("metadata") or {}).get("name") == SCHEDULER_CONF_MAP
    return True


def to_event(
    kind: str,
    change: Change,
    obj: dict[str, Any],
    *,
    relist_id: str | None = None,
) -> tuple[str, str, ObjectChanged]:
    """(subject, event id, data) for one observed object."""
    metadata = obj.get("metadata") or {}
    metadata.pop("managedFields", None)
    namespace = metadata.get("namespace") or None
    name = metadata["name"]
    uid = metadata.get("uid") or f"{namespace}/{name}"
    resource_version = _version(metadata.get("resourceVersion"))
    data = ObjectChanged(
        kind=kind,
        namespace=namespace,
        name=name,
        uid=uid,
        resource_version=resource_version,
        change=change,
        relist_id=relist_id,
        object=obj,
    )
    # A relist must reach the consumers even when the same version was published before (the
    # resync marker that follows deletes what the relist did not mention), so its ids are its own.
    suffix = f"relist:{relist_id}" if relist_id else change
    event_id = f"{uid}:{resource_version}:{suffix}"
    return subjects.cluster_object(kind, namespace, name), event_id, data


def _version(value: Any) -> int:
    """resourceVersion is opaque to clients, but every API server in use gives etcd's integer."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
