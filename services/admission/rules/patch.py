"""The RFC 6902 JSON Patch that turns one JSON document into another, for mutating webhooks.

`review.py` diffs the object the API server sent against the defaulted object and returns the
patch base64-encoded. The diff is minimal for objects (add / remove / replace per key) and
replaces a list whole when its length changed, which keeps patches short and always valid.
"""

from __future__ import annotations

from typing import Any

JsonPatch = list[dict[str, Any]]


def escape(token: str) -> str:
    """A key as a JSON Pointer token (RFC 6901): `~` -> `~0`, `/` -> `~1`."""
    return token.replace("~", "~0").replace("/", "~1")


def diff(before: Any, after: Any, path: str = "") -> JsonPatch:
    """Operations that, applied in order to `before`, give `after`."""
    if isinstance(before, dict) and isinstance(after, dict):
        ops: JsonPatch = []
        for key in before:
            if key not in after:
                ops.append({"op": "remove", "path": f"{path}/{escape(key)}"})
        for key, value in after.items():
            here = f"{path}/{escape(key)}"
            if key not in before:
                ops.append({"op": "add", "path": here, "value": value})
            else:
                ops.extend(diff(before[key], value, here))
        return ops
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [op for index, item in enumerate(before) for op in diff(item, after[index], f"{path}/{index}")]
    if _same(before, after):
        return []
    return [{"op": "replace", "path": path, "value": after}]


def _same(left: Any, right: Any) -> bool:
    # JSON distinguishes true from 1, Python's == does not.
    return type(left) is type(right) and left == right
