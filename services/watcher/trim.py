"""Pure: what of a Kubernetes object leaves the cluster on `cluster.*`, and what to do when too much.

Between `translate.to_event` and the publish, an object is cut to what its consumers read:
- every kind loses `metadata.managedFields` and kubectl's last-applied annotation (a second copy of
  the whole object, environment values included);
- a Pod loses its containers' environment (`env`, `envFrom`), command, arguments, probes and
  lifecycle hooks: no consumer reads them (the controller builds pods from the Job's template, the
  scheduler reads requests and placement), and they are where secrets and bulk live;
- then, only if the event would still pass the bus's payload limit, annotation values longer than
  LONG_ANNOTATION characters go (no consumer reads a long annotation).
- a ReplicaSet or StatefulSet loses its pod template: the controller reads its annotations and
  replica count (Volcano's PodGroups for workloads), and its pods are watched on their own;
- a Job keeps its templates, which the controller builds pods from, but their literal environment
  values are redacted (`shared.volcano.redaction`): the controller reads the Job from the API when
  it creates pods (see docs/poison.md and docs/security.md).

If the object still does not fit, `reference` gives the event that replaces it: the object's
identity and metadata only, marked incomplete. The controller fetches such an object from the API;
the scheduler's projection ignores it. Nothing here raises: every shape is tolerated.
"""

from __future__ import annotations

from typing import Any

from shared.volcano.redaction import redact_env

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
POD_CONTAINER_KINDS = ("containers", "initContainers", "ephemeralContainers")
POD_CONTAINER_DROPPED = (
    "env",
    "envFrom",
    "command",
    "args",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
)
# ReplicaSets and StatefulSets are read for their annotations and replica count only; their pod
# template (environment included) never leaves the cluster.
WORKLOAD_KINDS = ("ReplicaSet", "StatefulSet")
LONG_ANNOTATION = 4096
MAX_LISTED = 20  # trimmed annotations named in one event
REFERENCE_METADATA = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "labels",
    "ownerReferences",
)


def trim(kind: str, obj: dict[str, Any]) -> list[str]:
    """Cut `obj` in place to what consumers read; the paths of what was cut."""
    cut: list[str] = []
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        if metadata.pop("managedFields", None) is not None:
            cut.append("metadata.managedFields")
        annotations = metadata.get("annotations")
        if isinstance(annotations, dict) and annotations.pop(LAST_APPLIED, None) is not None:
            cut.append(f"metadata.annotations[{LAST_APPLIED}]")
    spec = obj.get("spec")
    if kind == "Pod" and isinstance(spec, dict):
        for containers in POD_CONTAINER_KINDS:
            dropped: set[str] = set()
            for container in _dicts(spec.get(containers)):
                dropped.update(
                    field for field in POD_CONTAINER_DROPPED if container.pop(field, None) is not None
                )
            cut.extend(f"spec.{containers}[*].{field}" for field in POD_CONTAINER_DROPPED if field in dropped)
    if kind == "Job":
        cut.extend(redact_env(obj))
    if kind in WORKLOAD_KINDS and isinstance(spec, dict) and spec.pop("template", None) is not None:
        cut.append("spec.template")
    return cut


def trim_long_annotations(obj: dict[str, Any]) -> list[str]:
    """The second cut, for an event still too large: long annotation values."""
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict):
        return []
    long = [key for key, value in annotations.items() if len(str(value)) > LONG_ANNOTATION]
    for key in long:
        del annotations[key]
    return [f"metadata.annotations[{key[:253]}]" for key in long[:MAX_LISTED]]


def reference(obj: dict[str, Any]) -> dict[str, Any]:
    """The object's identity alone, for an object no trimming brings under the payload limit."""
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    kept = {key: metadata[key] for key in REFERENCE_METADATA if key in metadata}
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": kept,
    }


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
