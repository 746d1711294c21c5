"""Pure: a Kubernetes object from a `cluster.*` event → the row the scheduler keeps for it.

The ingester calls `project` for each event and upserts the result into the table of its kind
(row_tables.py); the snapshot reader turns rows
back into the core's dataclasses. Only what scheduling reads is kept: requests as milli-unit maps,
placement constraints, phases, queue and gang parameters.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from services.scheduler import pod_fields
from services.scheduler.device_rows import DEVICE_KINDS, device_fields, device_key, with_dra_quota
from services.scheduler.storage_rows import STORAGE_KINDS, storage_fields, storage_key
from shared.domain.resources import Resources, pod_requests
from shared.messages.cluster import ObjectChanged
from shared.volcano.keys import ALLOWED_NAMESPACES, HIERARCHY, TASK_TOPOLOGY_PREFIX, TRACEPARENT
from shared.volcano.keys import GROUP_NAME as GROUP_ANNOTATION
from shared.volcano.keys import TASK_SPEC as TASK_SPEC_ANNOTATION
from shared.volcano.objects import KubeObject, PodObject

SCHEDULER_CONF_KEY = "volcano-scheduler.conf"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class ProjectedRow:
    """The row an object becomes: its kind says the table (row_tables.py), `key` is the row's key."""

    kind: str
    key: str
    values: dict[str, Any]


def project(event: ObjectChanged, scheduler_names: Collection[str]) -> ProjectedRow | None:
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
    return ProjectedRow(event.kind, values[_KEY_COLUMN[event.kind]], values)


def _meta(obj: dict[str, Any]) -> Mapping[str, Any]:
    return KubeObject(obj).meta


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
        "capability": with_dra_quota(_milli(spec.get("capability")), spec, "capability"),
        "guarantee": with_dra_quota(_milli((spec.get("guarantee") or {}).get("resource")), spec, "guarantee"),
        "deserved": with_dra_quota(_milli(spec.get("deserved")), spec, "deserved"),
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
        "topology": _gang_topology(spec),
    }


def _gang_topology(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The PodGroup's network-topology constraints: its own, and its sub-groups' (partitions)."""
    kept: dict[str, Any] = {}
    if isinstance(spec.get("networkTopology"), dict):
        kept["networkTopology"] = spec["networkTopology"]
    groups = [g for g in spec.get("subGroupPolicy") or () if isinstance(g, dict)]
    if groups:
        kept["subGroupPolicy"] = groups
    return kept or None


def _hyper_node(obj: dict[str, Any], _: Collection[str]) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    return {
        "name": _meta(obj)["name"],
        "tier": int(spec.get("tier") or 0),
        "tier_name": str(spec.get("tierName") or ""),
        "members": {"items": [m for m in spec.get("members") or () if isinstance(m, dict)]},
    }


def _scheduling_annotations(obj: dict[str, Any]) -> dict[str, str] | None:
    """Only the annotations the core reads (hierarchy, task topology, a queue's allowed
    namespaces, Phalanx's own), not every one, and a PodGroup's trace context, which its
    decisions carry on."""
    kept = {
        key: str(value)
        for key, value in (_meta(obj).get("annotations") or {}).items()
        if key.startswith(
            (
                HIERARCHY,
                TASK_TOPOLOGY_PREFIX,
                ALLOWED_NAMESPACES,
                TRACEPARENT,
                "phalanx.io/",  # runtime estimates, job class, the published predicted start
            )
        )
        or key in pod_fields.SLA_WAITING_TIME_KEYS
    }
    return kept or None


RELEASING_PHASE = "Releasing"


def _pod(obj: dict[str, Any], scheduler_names: Collection[str]) -> dict[str, Any]:
    pod = PodObject(obj)
    spec, annotations = pod.spec, pod.annotations
    request = pod_requests(
        spec.get("containers") or [], spec.get("initContainers") or [], spec.get("overhead")
    )
    placement = {key: spec[key] for key in ("nodeSelector", "affinity", "tolerations") if spec.get(key)}
    if pod.labels:
        placement["labels"] = pod.labels
    placement.update(pod_fields.scheduling_fields(pod))
    return {
        "uid": pod.meta["uid"],  # an object without its identity fails the projection, as before
        "namespace": pod.namespace or "default",
        "name": pod.meta["name"],
        "group_name": annotations.get(GROUP_ANNOTATION),
        "task_role": annotations.get(TASK_SPEC_ANNOTATION),
        "scheduler_name": spec.get("schedulerName"),
        "ours": spec.get("schedulerName") in scheduler_names,
        "request": dict(request),
        "node_name": pod.node_name or None,
        "phase": _pod_phase(pod),
        "priority": int(spec.get("priority") or 0),
        "priority_class": spec.get("priorityClassName") or None,
        "placement": placement or None,
        "created_at": _created(obj),
    }


def _pod_phase(pod: PodObject) -> str:
    """The pod's phase, or Releasing for one being deleted that has not ended: as Volcano's
    getTaskStatus, a terminating pod still holds its node until it is gone, but is on its way
    out (its grace period may outlast the eviction decision that caused it)."""
    phase = pod.phase or "Pending"
    if pod.deleting and phase in ("Pending", "Running"):
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


def _device_object(kind: str) -> Any:
    def build(obj: dict[str, Any], _: Collection[str]) -> dict[str, Any]:
        meta = _meta(obj)
        key = device_key(kind, meta.get("namespace") or "", meta["name"])
        return {"key": key, "kind": kind, "fields": device_fields(kind, obj)}

    return build


_BUILDERS = {
    "Node": _node,
    "Queue": _queue,
    "PriorityClass": _priority_class,
    "PodGroup": _podgroup,
    "Pod": _pod,
    "ConfigMap": _config_map,
    "PodDisruptionBudget": _disruption_budget,
    "HyperNode": _hyper_node,
    **{kind: _storage_object(kind) for kind in STORAGE_KINDS},
    **{kind: _device_object(kind) for kind in DEVICE_KINDS},
}
# The column that keys each kind's row.
_KEY_COLUMN: dict[str, str] = {
    "Node": "name",
    "Queue": "name",
    "PriorityClass": "name",
    "PodGroup": "uid",
    "Pod": "uid",
    "ConfigMap": "name",
    "PodDisruptionBudget": "uid",
    "HyperNode": "name",
    **dict.fromkeys(STORAGE_KINDS, "key"),
    **dict.fromkeys(DEVICE_KINDS, "key"),
}
PROJECTED_KINDS = frozenset(_BUILDERS)
