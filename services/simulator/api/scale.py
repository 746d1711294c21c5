"""The `scale` subresource of Deployments, ReplicaSets and StatefulSets (autoscaling/v1 Scale).

`kubectl scale` and autoscalers read and write a workload's replica count through it. A read
answers the Scale; a write (PUT of a Scale, or a patch of one) becomes a merge patch of the
workload's `spec.replicas` through the ordinary verbs, so admission and watchers see an update.
"""

from __future__ import annotations

from typing import Any

from services.simulator.admission.operations import Operations
from services.simulator.store import errors
from services.simulator.store.api_resources import BY_PATH, Kind
from services.simulator.store.store import Store

SCALABLE = frozenset(
    BY_PATH[("apps", "v1", plural)] for plural in ("deployments", "replicasets", "statefulsets")
)


def scale_of(obj: dict[str, Any]) -> dict[str, Any]:
    meta, spec = obj["metadata"], obj.get("spec") or {}
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": spec.get("replicas", 1)},
        "status": {
            "replicas": (obj.get("status") or {}).get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(selector.items())),
        },
    }


def _wanted_replicas(body: Any) -> int:
    """spec.replicas from a Scale, a merge patch of one, or a JSON patch replacing it."""
    if isinstance(body, list):
        for op in body:
            if (
                isinstance(op, dict)
                and op.get("path") == "/spec/replicas"
                and op.get("op") in ("replace", "add")
            ):
                body = {"spec": {"replicas": op.get("value")}}
                break
    replicas = ((body if isinstance(body, dict) else {}).get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise errors.ApiError(
            422,
            "Invalid",
            f'Scale.autoscaling "" is invalid: spec.replicas: Invalid value: {replicas!r}: '
            "must be greater than or equal to 0",
        )
    return replicas


async def serve(
    store: Store, operations: Operations, kind: Kind, namespace: str, name: str, method: str, body: Any
) -> dict[str, Any]:
    if method == "GET":
        return scale_of(store.get(kind, namespace, name))
    if method not in ("PUT", "PATCH"):
        raise errors.ApiError(
            405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
        )
    patch = {"spec": {"replicas": _wanted_replicas(body)}}
    updated = await operations.patch(kind, namespace, name, "application/merge-patch+json", patch)
    return scale_of(updated)
