"""PodGroup admission: the namespace's queue as default on CREATE; queue and topology checks.

Called by `review.py` for `scheduling.volcano.sh/v1beta1` PodGroups, mostly those other
operators create (KubeRay, Kubeflow), on CREATE (as Volcano registers it; an UPDATE is
reviewed only if a configuration sends one: registration.py does not). Messages are joined with `; `
("join" style), as Volcano joins them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from shared.domain.runtime_estimate import EXPECTED_RUNTIME, annotation_error
from shared.volcano import DEFAULT_QUEUE
from shared.volcano.objects import PodGroupObject

from .context import AdmissionContext
from .errors import FieldError, MessageStyle
from .queue_namespaces import namespace_errors

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
    namespace = PodGroupObject(result).namespace
    if queue == DEFAULT_QUEUE:
        # The CRD schema defaults the queue; write it so the object says where it will run.
        spec["queue"] = ctx.namespace_queues.get(namespace) or DEFAULT_QUEUE
    return result


def validate_podgroup_create(podgroup: Mapping[str, Any], ctx: AdmissionContext) -> list[FieldError]:
    spec = podgroup.get("spec") or {}
    errors = _queue_errors(spec.get("queue"), ctx)
    if spec.get("queue") and not errors:
        namespace = str(PodGroupObject(podgroup).namespace)
        errors = namespace_errors(str(spec["queue"]), namespace, ctx, listed=False)
    return errors + _topology_errors(spec) + _runtime_errors(podgroup)


def validate_podgroup_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldError]:
    """An update is held to the same topology rules as a creation (its bounds and shapes were
    checked against the schema before); the queue is not re-checked, since a PodGroup keeps
    running in a queue closed after it was admitted, as in Volcano."""
    del old
    return _topology_errors(new.get("spec") or {})


def _runtime_errors(podgroup: Mapping[str, Any]) -> list[FieldError]:
    """Phalanx's runtime estimate, when given, must be one (docs/backfill.md)."""
    message = annotation_error(PodGroupObject(podgroup).meta.get("annotations"))
    return [] if message is None else [FieldError(f"metadata.annotations[{EXPECTED_RUNTIME}]", message)]


def _queue_errors(queue: Any, ctx: AdmissionContext) -> list[FieldError]:
    if not queue:
        return []
    view = ctx.queues.get(str(queue))
    if view is None:
        message = f'unable to find queue: queue.scheduling.volcano.sh "{queue}" not found'
        return [FieldError("spec.queue", message, "FieldValueNotSupported")]
    if view.state != "Open":
        message = (
            f"can only submit PodGroup to queue with state `Open`, queue `{queue}` status is `{view.state}`."
        )
        return [FieldError("spec.queue", message)]
    return []


def _topology_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    found: list[FieldError] = []
    if _conflicting(spec.get("networkTopology")):
        found.append(FieldError("spec.networkTopology", TOPOLOGY_CONFLICT, "FieldValueForbidden"))
    for index, policy in enumerate(spec.get("subGroupPolicy") or []):
        if isinstance(policy, dict) and _conflicting(policy.get("networkTopology")):
            message = f"in subGroupPolicy '{policy.get('name', '')}': {TOPOLOGY_CONFLICT}"
            field = f"spec.subGroupPolicy[{index}].networkTopology"
            found.append(FieldError(field, message, "FieldValueForbidden"))
            break  # Volcano reports the first such policy only
    # Volcano words the topology problems as one sentence group, separated by spaces.
    group = " ".join(error.message for error in found)
    return [
        FieldError(error.field, error.message, error.reason, group if index == 0 else "")
        for index, error in enumerate(found)
    ]


def _conflicting(topology: Any) -> bool:
    return (
        isinstance(topology, dict)
        and topology.get("highestTierAllowed") is not None
        and bool(topology.get("highestTierName"))
    )
