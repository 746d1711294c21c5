"""PodGroup admission: the namespace's queue as default on CREATE; queue and topology checks.

Called by `review.py` for `scheduling.volcano.sh/v1beta1` PodGroups, mostly those other
operators create (KubeRay, Kubeflow). Messages are joined with `; ` ("join" style), as Volcano
joins them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from shared.volcano import DEFAULT_QUEUE

from .context import AdmissionContext
from .errors import FieldError, MessageStyle

STYLE: MessageStyle = "join"
TOPOLOGY_CONFLICT = (
    "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously."
)


def default_podgroup(podgroup: Mapping[str, Any], ctx: AdmissionContext) -> dict[str, Any]:
    """A PodGroup left on the default queue moves to its namespace's queue
    (annotation `scheduling.volcano.sh/queue-name`); a new dict, `podgroup` is untouched."""
    result = copy.deepcopy(dict(podgroup))
    spec = result.setdefault("spec", {})
    queue = spec.get("queue") or DEFAULT_QUEUE
    namespace = (result.get("metadata") or {}).get("namespace") or ""
    if queue == DEFAULT_QUEUE:
        # The CRD schema defaults the queue; write it so the object says where it will run.
        spec["queue"] = ctx.namespace_queues.get(namespace) or DEFAULT_QUEUE
    return result


def validate_podgroup_create(
    podgroup: Mapping[str, Any], ctx: AdmissionContext
) -> list[FieldError]:
    spec = podgroup.get("spec") or {}
    errors: list[FieldError] = []
    queue = spec.get("queue")
    if queue:
        view = ctx.queues.get(queue)
        if view is None:
            message = f'unable to find queue: queue.scheduling.volcano.sh "{queue}" not found'
            errors.append(FieldError("spec.queue", message, "FieldValueNotSupported"))
        elif view.state != "Open":
            message = (
                "can only submit PodGroup to queue with state `Open`, "
                f"queue `{queue}` status is `{view.state}`."
            )
            errors.append(FieldError("spec.queue", message))
    if _conflicting(spec.get("networkTopology")):
        errors.append(FieldError("spec.networkTopology", TOPOLOGY_CONFLICT, "FieldValueForbidden"))
    for index, policy in enumerate(spec.get("subGroupPolicy") or []):
        if isinstance(policy, dict) and _conflicting(policy.get("networkTopology")):
            message = f"in subGroupPolicy '{policy.get('name', '')}': {TOPOLOGY_CONFLICT}"
            field = f"spec.subGroupPolicy[{index}].networkTopology"
            errors.append(FieldError(field, message, "FieldValueForbidden"))
            break  # Volcano reports the first such policy only
    if errors and len(errors) > 1 and errors[0].field == "spec.queue":
        # Volcano joins its two groups with "; " and the topology ones with " ".
        topology = " ".join(error.message for error in errors[1:])
        errors = [errors[0], *(FieldError(e.field, e.message, e.reason, "") for e in errors[1:])]
        errors[1] = FieldError(errors[1].field, errors[1].message, errors[1].reason, topology)
    elif len(errors) > 1:
        joined = " ".join(error.message for error in errors)
        errors = [
            FieldError(e.field, e.message, e.reason, joined if i == 0 else "")
            for i, e in enumerate(errors)
        ]
    return errors


def _conflicting(topology: Any) -> bool:
    return (
        isinstance(topology, dict)
        and topology.get("highestTierAllowed") is not None
        and bool(topology.get("highestTierName"))
    )
