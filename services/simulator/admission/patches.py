"""PATCH bodies applied to stored objects: JSON merge patch, JSON patch and strategic merge.

The HTTP layer picks the function by Content-Type; webhook answers (JSONPatch) use the same
`json_patch`. Strategic merge is JSON merge patch plus what kubectl's client-side apply relies
on: lists of known fields merge by their key (containers by name, conditions by type, ...) and
the `$patch`, `$setElementOrder` and `$retainKeys` directives are honoured or dropped. Pure.
"""

from __future__ import annotations

import copy
from typing import Any

from services.simulator.store.errors import ApiError

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

# Lists that strategic merge combines element by element, by this key (the Kubernetes
# `patchMergeKey` of the fields a manifest commonly holds); every other list is replaced.
_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "conditions": "type",
    "imagePullSecrets": "name",
    "ownerReferences": "uid",
    "tolerations": "key",
    "hostAliases": "ip",
}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any, field: str = "") -> Any:
    if isinstance(patch, list):
        return _merge_list(target, patch, field)
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            result[name] = [v for v in result.get(name) or [] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        else:
            merged = strategic_merge_patch(result.get(key), value, key)
            if merged is None and isinstance(value, dict):
                result.pop(key, None)
            else:
                result[key] = merged
    return result


def _merge_list(target: Any, patch: list[Any], field: str) -> list[Any]:
    key = _MERGE_KEYS.get(field)
    if (
        key is None
        or not isinstance(target, list)
        or not all(isinstance(item, dict) and key in item for item in patch if item.get("$patch") is None)
    ):
        return [copy.deepcopy(item) for item in patch if not _is_directive(item)]
    merged = list(target)
    for item in patch:
        position = next(
            (i for i, old in enumerate(merged) if isinstance(old, dict) and old.get(key) == item.get(key)),
            None,
        )
        if isinstance(item, dict) and item.get("$patch") == "delete":
            if position is not None:
                merged.pop(position)
        elif position is None:
            merged.append(strategic_merge_patch(None, item))
        else:
            merged[position] = strategic_merge_patch(merged[position], item)
    return merged


def _is_directive(item: Any) -> bool:
    return isinstance(item, dict) and "$patch" in item


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 (add, remove, replace, move, copy, test); 422 when an operation cannot apply."""
    if not isinstance(operations, list):
        raise ApiError(400, "BadRequest", "json patch must be a list of operations")
    document = copy.deepcopy(target)
    for operation in operations:
        document = _apply_operation(document, operation)
    return document


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _unprocessable(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _unprocessable(message: str) -> ApiError:
    return ApiError(
        422, "Invalid", f"the server rejected our request due to an error in our request: {message}"
    )


def _parent(document: Any, parts: list[str]) -> Any:
    current = document
    for part in parts[:-1]:
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            raise _unprocessable(f"doc is missing path: /{'/'.join(parts)}")
    return current


def _get(document: Any, parts: list[str]) -> Any:
    if not parts:
        return document
    parent = _parent(document, parts)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise _unprocessable(f"doc is missing path: /{'/'.join(parts)}")


def _add(document: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _parent(document, parts)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        index = len(parent) if last == "-" else int(last) if last.isdigit() else -1
        if not 0 <= index <= len(parent):
            raise _unprocessable(f"index out of range: /{'/'.join(parts)}")
        parent.insert(index, value)
    else:
        raise _unprocessable(f"doc is missing path: /{'/'.join(parts)}")
    return document


def _remove(document: Any, parts: list[str]) -> Any:
    _get(document, parts)
    parent = _parent(document, parts)
    if isinstance(parent, dict):
        del parent[parts[-1]]
    else:
        del parent[int(parts[-1])]
    return document


def _apply_operation(document: Any, operation: Any) -> Any:
    if not isinstance(operation, dict) or "op" not in operation or "path" not in operation:
        raise ApiError(400, "BadRequest", f"invalid JSON patch operation: {operation!r}")
    op, parts = operation["op"], _pointer(operation["path"])
    if op == "add":
        return _add(document, parts, copy.deepcopy(operation.get("value")))
    if op == "remove":
        return _remove(document, parts)
    if op == "replace":
        _get(document, parts)
        if not parts:
            return copy.deepcopy(operation.get("value"))
        parent = _parent(document, parts)
        index: Any = parts[-1] if isinstance(parent, dict) else int(parts[-1])
        parent[index] = copy.deepcopy(operation.get("value"))
        return document
    if op in ("move", "copy"):
        source = _pointer(operation.get("from", ""))
        value = copy.deepcopy(_get(document, source))
        if op == "move":
            document = _remove(document, source)
        return _add(document, parts, value)
    if op == "test":
        if _get(document, parts) != operation.get("value"):
            raise _unprocessable(f"testing value /{'/'.join(parts)} failed")
        return document
    raise ApiError(400, "BadRequest", f"unknown JSON patch operation {op!r}")


def apply_patch(content_type: str, target: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Dispatch on the request's Content-Type; 415 for server-side apply and unknown types."""
    media = content_type.split(";")[0].strip()
    if media == JSON_PATCH:
        result = json_patch(target, patch)
    elif media == MERGE_PATCH:
        result = merge_patch(target, patch)
    elif media == STRATEGIC_MERGE_PATCH:
        result = strategic_merge_patch(target, patch)
    else:
        raise ApiError(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: "
            f"{JSON_PATCH}, {MERGE_PATCH}, {STRATEGIC_MERGE_PATCH}",
        )
    if not isinstance(result, dict):
        raise _unprocessable("the patch did not produce an object")
    return result
