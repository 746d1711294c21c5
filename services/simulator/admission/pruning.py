"""Unknown fields: found, refused under fieldValidation=Strict, and otherwise dropped. Pure.

kube-apiserver decodes a built-in kind into its Go type, which has no place for a field it does
not declare, and prunes a custom resource to its CRD's structural schema: either way an unknown
field is silently lost (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#field-pruning),
or refused when the request says fieldValidation=Strict
(https://kubernetes.io/docs/reference/using-api/api-concepts/#field-validation). Built-in kinds
are checked against the official client's generated models; Volcano's kinds against their
top-level fields, metadata, and the status each CRD declares (Volcano's JobStatus,
PodGroupStatus, QueueStatus). Their specs are not pruned: `shared.volcano.schema` describes only
the spec fields Phalanx reads, and pruning by it would drop fields a real CRD keeps.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import kubernetes.client as models

from services.simulator.store import errors
from services.simulator.store.api_resources import Kind
from services.simulator.store.store import clone

Shape = Any  # "leaf" | ("object", {field: Shape}) | ("map", Shape) | ("array", Shape)
_LEAF = "leaf"
_CONDITIONS = (
    "array",
    (
        "object",
        dict.fromkeys(("type", "status", "transitionID", "lastTransitionTime", "reason", "message"), _LEAF),
    ),
)
VOLCANO_STATUS: dict[str, Shape] = {
    "Job": (
        "object",
        {
            "state": ("object", dict.fromkeys(("phase", "reason", "message", "lastTransitionTime"), _LEAF)),
            "taskStatusCount": ("map", ("object", {"phase": ("map", _LEAF)})),
            "controlledResources": ("map", _LEAF),
            "conditions": ("array", ("object", dict.fromkeys(("status", "lastTransitionTime"), _LEAF))),
            **dict.fromkeys(
                (
                    "minAvailable",
                    "pending",
                    "running",
                    "succeeded",
                    "failed",
                    "terminating",
                    "unknown",
                    "version",
                    "retryCount",
                    "runningDuration",
                ),
                _LEAF,
            ),
        },
    ),
    "PodGroup": (
        "object",
        {"phase": _LEAF, "conditions": _CONDITIONS, "running": _LEAF, "succeeded": _LEAF, "failed": _LEAF},
    ),
    "Queue": (
        "object",
        {
            "reservation": ("object", {"nodes": _LEAF, "resource": _LEAF}),
            "allocated": _LEAF,
            **dict.fromkeys(("state", "unknown", "pending", "running", "inqueue", "completed"), _LEAF),
        },
    ),
}
_TOP = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})
_COMMAND_TOP = frozenset({"apiVersion", "kind", "metadata", "action", "target", "reason", "message"})
_LIST = re.compile(r"^List\[(.+)\]$")
_DICT = re.compile(r"^Dict\[str, (.+)\]$")
_MODEL_NAMES = {"Event": "CoreV1Event", "ResourceClaim": "ResourceV1ResourceClaim"}


def unknown_fields(kind: Kind, obj: dict[str, Any]) -> list[str]:
    """The dotted paths of the fields `obj` sets that `kind` does not declare, in order."""
    found: list[str] = []
    model = _model(kind)
    if model is not None:
        _walk_model(obj, model.__name__, "", found)
        return found
    top = _COMMAND_TOP if kind.kind == "Command" else _TOP
    found += [key for key in obj if key not in top]
    _walk_model(obj.get("metadata"), "V1ObjectMeta", "metadata", found)
    if kind.kind in VOLCANO_STATUS:
        _walk_shape(obj.get("status"), VOLCANO_STATUS[kind.kind], "status", found)
    return found


def pruned(obj: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    """`obj` without the fields at `paths` (from `unknown_fields`; list items by index)."""
    if not paths:
        return obj
    result: dict[str, Any] = clone(obj)
    for path in paths:
        parts = [p for p in re.split(r"\.|\[(\d+)\]", path) if p]
        parent: Any = result
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent.get(part)
            if parent is None:
                break
        if isinstance(parent, dict):
            parent.pop(parts[-1], None)
    return result


def strict_error(unknown: list[str]) -> errors.ApiError:
    listed = ", ".join(f'unknown field "{path}"' for path in unknown)
    return errors.bad_request(f"strict decoding error: {listed}")


@cache
def _model(kind: Kind) -> Any:
    if kind.group.endswith("volcano.sh"):
        return None
    return getattr(models, _MODEL_NAMES.get(kind.kind, f"V1{kind.kind}"), None)


@cache
def _fields(model_name: str) -> dict[str, str] | None:
    model = getattr(models, model_name, None)
    if model is None or not hasattr(model, "openapi_types"):
        return None
    return {model.attribute_map[attr]: type_name for attr, type_name in model.openapi_types.items()}


def _walk_model(value: Any, type_name: str, path: str, found: list[str]) -> None:
    if value is None:
        return
    if listed := _LIST.match(type_name):
        for index, item in enumerate(value if isinstance(value, list) else []):
            _walk_model(item, listed.group(1), f"{path}[{index}]", found)
        return
    if mapped := _DICT.match(type_name):
        for key, item in (value if isinstance(value, dict) else {}).items():
            _walk_model(item, mapped.group(1), f"{path}.{key}" if path else str(key), found)
        return
    fields = _fields(type_name)
    if fields is None or not isinstance(value, dict):
        return  # a primitive, free-form object, or a type error left to validation
    for key, item in value.items():
        child = f"{path}.{key}" if path else str(key)
        if key not in fields:
            found.append(child)
        else:
            _walk_model(item, fields[key], child, found)


def _walk_shape(value: Any, shape: Shape, path: str, found: list[str]) -> None:
    if value is None or shape == _LEAF:
        return
    kind, children = shape
    if kind == "object" and isinstance(value, dict):
        for key, item in value.items():
            if key not in children:
                found.append(f"{path}.{key}")
            else:
                _walk_shape(item, children[key], f"{path}.{key}", found)
    elif kind == "map" and isinstance(value, dict):
        for key, item in value.items():
            _walk_shape(item, children, f"{path}.{key}", found)
    elif kind == "array" and isinstance(value, list):
        for index, item in enumerate(value):
            _walk_shape(item, children, f"{path}[{index}]", found)
