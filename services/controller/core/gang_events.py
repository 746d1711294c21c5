"""What users see when the scheduler decides about a gang: PodGroup conditions and the Events
`Unschedulable`, `Scheduled` and `Evict`, worded as Volcano words them.

Our scheduler never writes to Kubernetes; it publishes decisions, and the controller shell turns
them into these (the Kubernetes writes are the controller's). Pure: the shell passes the
session's id, the time and the scheduler's fit-error text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from services.controller.core.status import format_time


@dataclass(frozen=True)
class ObjectEvent:
    """A Kubernetes Event on a Pod or PodGroup."""

    kind: str
    namespace: str
    name: str
    type: str
    reason: str
    message: str


def _ident(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


def unschedulable_event(podgroup: Mapping[str, Any], pending: int, total: int, fit_error: str) -> ObjectEvent:
    """Warning `Unschedulable` on the PodGroup, counting the gang's pending tasks."""
    return ObjectEvent(
        "PodGroup",
        *_ident(podgroup),
        "Warning",
        "Unschedulable",
        f"{pending}/{total} tasks in gang unschedulable: {fit_error}",
    )


def scheduled_event(podgroup: Mapping[str, Any]) -> ObjectEvent:
    return ObjectEvent("PodGroup", *_ident(podgroup), "Normal", "Scheduled", "pod group is ready")


def evict_events(pod: Mapping[str, Any], podgroup_name: str | None, reason: str) -> tuple[ObjectEvent, ...]:
    """Warning `Evict` on the evicted pod, and Normal `Evict` on its PodGroup when it has one."""
    namespace, name = _ident(pod)
    events = [ObjectEvent("Pod", namespace, name, "Warning", "Evict", f"Pod is evicted, because of {reason}")]
    if podgroup_name:
        events.append(ObjectEvent("PodGroup", namespace, podgroup_name, "Normal", "Evict", reason))
    return tuple(events)


def unschedulable_condition(message: str, transition_id: str, now: datetime) -> dict[str, Any]:
    return {
        "type": "Unschedulable",
        "status": "True",
        "transitionID": transition_id,
        "lastTransitionTime": format_time(now),
        "reason": "NotEnoughResources",
        "message": message,
    }


def scheduled_condition(transition_id: str, now: datetime) -> dict[str, Any]:
    return {
        "type": "Scheduled",
        "status": "True",
        "transitionID": transition_id,
        "lastTransitionTime": format_time(now),
        "reason": "tasks in gang are ready to be scheduled",
        "message": "",
    }


_VOLATILE = ("lastTransitionTime", "transitionID")


def upsert_condition(status: Mapping[str, Any], condition: Mapping[str, Any]) -> dict[str, Any]:
    """The PodGroup status with `condition` replacing the one of its type. An unchanged condition
    (ignoring time and session id) keeps its old stamp, so no write is needed for it."""
    conditions = list(status.get("conditions") or ())
    same_type = next((c for c in conditions if c.get("type") == condition.get("type")), None)
    if same_type is not None:

        def stable(c: Mapping[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in c.items() if k not in _VOLATILE}

        if stable(same_type) == stable(condition):
            return dict(status)
        conditions = [c for c in conditions if c is not same_type]
    return {**status, "conditions": [*conditions, dict(condition)]}
