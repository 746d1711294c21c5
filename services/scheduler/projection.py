"""Pure: a Kubernetes object from a `cluster.*` event → the row the scheduler keeps for it.

The ingester calls `project` for each event and upserts the result; the snapshot reader turns rows
back into the core's dataclasses. Only what scheduling reads is kept: requests as milli-unit maps,
placement constraints, phases, queue and gang parameters.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from services.scheduler import pod_fields
from services.scheduler.storage_rows import STORAGE_KINDS, storage_fields, storage_key
from shared import tracing
from shared.domain.resources import Resources, pod_requests
from shared.messages.cluster import ObjectChanged
from shared.storage import tables
from shared.volcano.queue_access import ALLOWED_NAMESPACES

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
SCHEDULER_CONF_KEY = "volcano-scheduler.conf"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Row:
    table: type[tables.Base]
    key: str
    values: dict[str, Any]


def project(event: ObjectChanged, scheduler_names: Collection[str]) -> Row | None:
    builder = _BUILDERS.get(event.kind)
    if builder is None or (not event.complete and event.change != "DELETED"):
        # An object too large for the bus arrives as its identity alone; projecting that would
        # schedule it with no requests. It is audited by the watcher and left out (docs/poison.md).
        return None
    values = builder(event.object, scheduler_names)
    if values is None:
        return None
    values.update(
        resource_version=event.resource_version,
        relist_id=event.relist_id,
        deleted=event.change == "DELETED",
    )
    table, key = _TABLES[event.kind]
    return Row(table, values[key], values)


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _created(obj: dict[str, Any]) -> datetime:
    stamp = _meta(obj).get("creationTimestamp")
    if not stamp:
        return EPOCH
    return datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))


def _milli(quantities: dict[str, Any] | None) -> dict[str, int] | None:
    return dict(Resources.parse(quantities)) if quantities else None


def _gang_quantities(min_resources: dict[str, Any] | None) -> dict[str, Any] | None:
    """minResources as Volcano's controller writes it holds quota names (`requests.cpu`,
    `count/pods`, `limits.*`); the scheduler reads the resource amounts behind them."""
    if not min_resources:
        return None
    amounts: dict[str, Any] = {}
    for name, quantity in min_resources.items():
        if name.startswith(("count/", "limits.")):
            continue
        plain = name.removeprefix("requests.")
        held = amounts.get(plain)
        if held is None or Resources.parse({plain: held})[plain] < Resources.parse({plain: quantity})[plain]:
            amounts[plain] = quantity
    return amounts


def _node(obj: dict[str, Any], _: Collection[str]) -> dict[str, Any]:
    status = obj.get("status") or {}
    spec = obj.get("spec") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    )
    return {
        "name": _meta(obj)["name"],
        "uid": _meta(obj).get("uid"),
        "allocatable": _milli(status.get("allocatable") or status.get("capacity")) or {},
        "labels": _meta(obj).get("labels") or {},
        "taints": {"items": spec.get("taints") or []},
        "unschedulable": bool(spec.get("unschedulable")),
        "ready": ready,
    }


def _queue(obj: dict[str, Any], _: Collection[str]) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return {
        "name": _meta(obj)["name"],
        "uid": _meta(obj).get("uid"),
        "weight": int(spec.get("weight") or 1),
        "capability": _milli(spec.get("capability")),
        "guarantee": _milli((spec.get("guarantee") or {}).get("resource")),
        "deserved": _milli(spec.get("deserved")),
        "reclaimable": spec.get("reclaimable", True) is not False,
        "state": status.get("state") or "Open",
        "parent": spec.get("parent") or None,
        "priority": int(spec.get("priority") or 0),
        "annotations": _scheduling_annotations(obj),
    }


def _priority_class(obj: dict[str, Any], _: Collection[str]) -> dict[str, Any]:
    return {
        "name": _meta(obj)["name"],
        "value": int(obj.get("value") or 0),
        "global_default": bool(obj.get("globalDefault")),
    }


def _podgroup(obj: dict[str, Any], _: Collection[str]) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return {
        "uid": _meta(obj)["uid"],
        "namespace": _meta(obj).get("namespace") or "default",
        "name": _meta(obj)["name"],
        "queue": spec.get("queue") or "default",
        "min_member": int(spec.get("minMember") or 1),
        "min_task_member": spec.get("minTaskMember") or None,
        "min_resources": _milli(_gang_quantities(spec.get("minResources"))),
        "priority_class": spec.get("priorityClassName") or None,
        "phase": status.get("phase") or "Pending",
        "created_at": _created(obj),
        "annotations": _scheduling_annotations(obj),
    }


def _scheduling_annotations(obj: dict[str, Any]) -> dict[str, str] | None:
    """Only the annotations the core reads (hierarchy, task topology, a queue's allowed
    namespaces), not every one, and a PodGroup's trace context, which its decisions carry on."""
    kept = {
        key: str(value)
        for key, value in (_meta(obj).get("annotations") or {}).items()
        if key.startswith(
            (
                "volcano.sh/hierarchy",
                "volcano.sh/task-topology",
                ALLOWED_NAMESPACES,
                tracing.TRACEPARENT_ANNOTATION,
            )
        )
        or key in pod_fields.SLA_WAITING_TIME_KEYS
    }
    return kept or None


RELEASING_PHASE = "Releasing"


def _pod(obj: dict[str, Any], scheduler_names: Collection[str]) -> dict[str, Any]:
    meta = _meta(obj)
    spec = obj.get("spec") or {}
    annotations = meta.get("annotations") or {}
    request = pod_requests(
        spec.get("containers") or [], spec.get("initContainers") or [], spec.get("overhead")
    )
    placement = {key: spec[key] for key in ("nodeSelector", "affinity", "tolerations") if spec.get(key)}
    if meta.get("labels"):
        placement["labels"] = meta["labels"]
    placement.update(pod_fields.scheduling_fields(obj))
    return {
        "uid": meta["uid"],
        "namespace": meta.get("namespace") or "default",
        "name": meta["name"],
        "group_name": annotations.get(GROUP_ANNOTATION),
        "task_role": annotations.get(TASK_SPEC_ANNOTATION),
        "scheduler_name": spec.get("schedulerName"),
        "ours": spec.get("schedulerName") in scheduler_names,
        "request": dict(request),
        "node_name": spec.get("nodeName") or None,
        "phase": _pod_phase(obj),
        "priority": int(spec.get("priority") or 0),
        "priority_class": spec.get("priorityClassName") or None,
        "placement": placement or None,
        "created_at": _created(obj),
    }


def _pod_phase(obj: dict[str, Any]) -> str:
    """The pod's phase, or Releasing for one being deleted that has not ended: as Volcano's
    getTaskStatus, a terminating pod still holds its node until it is gone, but is on its way
    out (its grace period may outlast the eviction decision that caused it)."""
    phase = (obj.get("status") or {}).get("phase") or "Pending"
    if _meta(obj).get("deletionTimestamp") and phase in ("Pending", "Running"):
        return RELEASING_PHASE
    return str(phase)


def _config_map(obj: dict[str, Any], _: Collection[str]) -> dict[str, Any] | None:
    conf = (obj.get("data") or {}).get(SCHEDULER_CONF_KEY)
    if conf is None:
        return None
    return {"name": SCHEDULER_CONF_KEY, "conf": conf}


def _disruption_budget(obj: dict[str, Any], _: Collection[str]) -> dict[str, Any]:
    """What the pdb plugin reads: whose pods the budget covers and how many it lets go now
    (status.disruptionsAllowed, as the disruption controller computed it)."""
    meta = _meta(obj)
    return {
        "uid": meta["uid"],
        "namespace": meta.get("namespace") or "default",
        "name": meta["name"],
        "selector": (obj.get("spec") or {}).get("selector"),
        "disruptions_allowed": int((obj.get("status") or {}).get("disruptionsAllowed") or 0),
    }


def _storage_object(kind: str) -> Any:
    def build(obj: dict[str, Any], _: Collection[str]) -> dict[str, Any]:
        meta = _meta(obj)
        key = storage_key(kind, meta.get("namespace") or "", meta["name"])
        return {"key": key, "kind": kind, "fields": storage_fields(kind, obj)}

    return build


_BUILDERS = {
    "Node": _node,
    "Queue": _queue,
    "PriorityClass": _priority_class,
    "PodGroup": _podgroup,
    "Pod": _pod,
    "ConfigMap": _config_map,
    "PodDisruptionBudget": _disruption_budget,
    **{kind: _storage_object(kind) for kind in STORAGE_KINDS},
}
_TABLES: dict[str, tuple[type[tables.Base], str]] = {
    "Node": (tables.Node, "name"),
    "Queue": (tables.Queue, "name"),
    "PriorityClass": (tables.PriorityClass, "name"),
    "PodGroup": (tables.PodGroup, "uid"),
    "Pod": (tables.Pod, "uid"),
    "ConfigMap": (tables.SchedulerConfig, "name"),
    "PodDisruptionBudget": (tables.DisruptionBudget, "uid"),
    **{kind: (tables.StorageObject, "key") for kind in STORAGE_KINDS},
}
TABLE_OF_KIND = {kind: table for kind, (table, _) in _TABLES.items()}
