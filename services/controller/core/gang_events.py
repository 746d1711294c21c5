"""What users see when the scheduler decides about a gang: PodGroup conditions and the Events
`Unschedulable`, `Scheduled` and `Evict`, worded as Volcano words them, and kube-scheduler's
`Preempted` on a preemption's victims.

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
from shared.volcano.objects import KubeObject


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
    view = KubeObject(obj)
    return view.namespace, view.name


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


PREEMPTING_REASONS = ("preempt", "reclaim")


def victim_events(
    pod: Mapping[str, Any],
    podgroup: Mapping[str, Any] | None,
    *,
    reason: str,
    node: str,
    preemptor: str | None,
) -> tuple[tuple[dict[str, Any], str, str, str], ...]:
    """The Events an eviction leaves, as (involved object, type, reason, message).

    Volcano's Warning `Evict` on the pod and Normal `Evict` on its PodGroup; for a preemption or
    a reclaim also kube-scheduler's Normal `Preempted` on the pod, and the same on the Job that owns
    it, so `kubectl describe` of either says who took the room."""
    namespace, name = _ident(pod)
    pod_ref = _reference(pod, "v1", "Pod")
    events = [(pod_ref, "Warning", "Evict", f"Pod is evicted, because of {reason}")]
    if reason in PREEMPTING_REASONS and preemptor:
        by = f"Preempted by pod group {preemptor} on node {node}"
        events.append((pod_ref, "Normal", "Preempted", by))
        owner = KubeObject(pod).controller_ref
        if owner is not None and owner.get("kind") == "Job":
            job = {
                "apiVersion": owner.get("apiVersion"),
                "kind": "Job",
                "metadata": {"name": owner.get("name"), "namespace": namespace, "uid": owner.get("uid")},
            }
            events.append(
                (job, "Normal", "Preempted", f"Pod {name} preempted by pod group {preemptor} on node {node}")
            )
    if podgroup is not None:
        events.append(
            (_reference(podgroup, "scheduling.volcano.sh/v1beta1", "PodGroup"), "Normal", "Evict", reason)
        )
    return tuple(events)


def _reference(obj: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    view = KubeObject(obj)
    return {
        "apiVersion": obj.get("apiVersion") or api_version,
        "kind": obj.get("kind") or kind,
        "metadata": {"name": view.name, "namespace": view.namespace, "uid": view.uid},
    }


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
