"""Server-side apply: field ownership (`metadata.managedFields`), conflicts and `force`. Pure.

Follows https://kubernetes.io/docs/reference/using-api/server-side-apply/. A field set is the set
of leaf paths an object sets; a manager (its name and Apply or Update) owns a set. Applying a
configuration as manager M: a field M does not own, owned by another manager and set there to a
different value, is a conflict (409) unless `force` takes it over; fields M applied before and
leaves out now are removed unless someone else owns them; M then owns exactly what it applied. A
plain update (create, PUT, PATCH) by M takes ownership of what it changed, from everyone.

Lists are atomic here (one leaf, owned whole), where Kubernetes merges a few of them by key
(containers by name, ...); docs/simulator.md lists that difference.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from services.simulator.store import errors
from services.simulator.store.store import clone

Path = tuple[str, ...]
APPLY, UPDATE = "Apply", "Update"
# Fields the server owns, never a manager.
_SYSTEM_METADATA = frozenset(
    [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    ]
)


def leaf_paths(obj: Any) -> set[Path]:
    """Every leaf a configuration or object sets (a list is one leaf; an empty object none)."""
    found: set[Path] = set()

    def walk(value: Any, path: Path) -> None:
        if isinstance(value, dict):
            for key, child in value.items():
                walk(child, (*path, str(key)))
        else:
            found.add(path)

    for key, value in (obj or {}).items():
        if key in ("apiVersion", "kind", "status"):
            continue
        if key == "metadata" and isinstance(value, dict):
            for meta_key, meta_value in value.items():
                if meta_key not in _SYSTEM_METADATA:
                    walk(meta_value, ("metadata", meta_key))
            continue
        walk(value, (key,))
    return found


def value_at(obj: Any, path: Path) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return _ABSENT
        obj = obj[key]
    return obj


_ABSENT = object()


def _set(obj: dict[str, Any], path: Path, value: Any) -> None:
    for key in path[:-1]:
        child = obj.get(key)
        if not isinstance(child, dict):
            child = obj[key] = {}
        obj = child
    obj[path[-1]] = value


def _remove(obj: dict[str, Any], path: Path) -> None:
    parents = [obj]
    for key in path[:-1]:
        child = parents[-1].get(key)
        if not isinstance(child, dict):
            return
        parents.append(child)
    parents[-1].pop(path[-1], None)
    # Drop the objects the removal left empty, as the apply's result would not have them.
    for depth in range(len(path) - 1, 0, -1):
        if parents[depth]:
            break
        parents[depth - 1].pop(path[depth - 1], None)


def _overlaps(a: Path, b: Path) -> bool:
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


# -- managedFields entries <-> sets --------------------------------------------------------------


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for key in path:
            node = node.setdefault(f"f:{key}", {})
    return tree


def from_fields_v1(tree: Any, prefix: Path = ()) -> set[Path]:
    found: set[Path] = set()
    for key, child in (tree or {}).items():
        if not key.startswith("f:"):
            continue
        path = (*prefix, key[2:])
        if child:
            found |= from_fields_v1(child, path)
        else:
            found.add(path)
    return found


Owners = dict[tuple[str, str], set[Path]]


def owners_of(obj: dict[str, Any]) -> Owners:
    owned: Owners = {}
    for entry in obj.get("metadata", {}).get("managedFields") or []:
        if isinstance(entry, dict) and not entry.get("subresource"):
            key = (str(entry.get("manager", "")), str(entry.get("operation", UPDATE)))
            owned[key] = from_fields_v1(entry.get("fieldsV1"))
    return owned


def entries(owned: Owners, api_version: str, now: str, previous: dict[str, Any]) -> list[dict[str, Any]]:
    """managedFields for `owned`; an entry whose set did not change keeps its time."""
    kept = {
        (str(e.get("manager", "")), str(e.get("operation", UPDATE))): e
        for e in previous.get("metadata", {}).get("managedFields") or []
        if isinstance(e, dict)
    }
    written = []
    for (manager, operation), paths in owned.items():
        if not paths:
            continue
        fields = to_fields_v1(paths)
        old = kept.get((manager, operation))
        time = old["time"] if old is not None and old.get("fieldsV1") == fields and old.get("time") else now
        written.append(
            {
                "manager": manager,
                "operation": operation,
                "apiVersion": api_version,
                "time": time,
                "fieldsType": "FieldsV1",
                "fieldsV1": fields,
            }
        )
    return written


# -- the two kinds of write ----------------------------------------------------------------------


def record_create(
    obj: dict[str, Any], request: Any, manager: str, operation: str, now: str
) -> dict[str, Any]:
    """The created `obj` with `manager` owning what its request set (not the server's defaults)."""
    return _with_entries(obj, {(manager, operation): leaf_paths(request)}, now, {})


def record_update(old: dict[str, Any] | None, new: dict[str, Any], manager: str, now: str) -> dict[str, Any]:
    """`new` with managedFields after a create or update by `manager`: it owns what it changed."""
    owned = owners_of(old) if old is not None else {}
    before, after = leaf_paths(old or {}), leaf_paths(new)
    changed = {p for p in after if old is None or value_at(old, p) != value_at(new, p)}
    gone = before - after
    for key in owned:
        owned[key] = {p for p in owned[key] if p not in gone and not any(_overlaps(p, c) for c in changed)}
    mine = owned.setdefault((manager, UPDATE), set())
    mine |= changed
    return _with_entries(new, owned, now, old or {})


def apply(
    current: dict[str, Any] | None, config: dict[str, Any], manager: str, *, force: bool, now: str
) -> dict[str, Any]:
    """The object after `manager` applies `config` to `current` (None: it is created)."""
    applied = leaf_paths(config)
    if current is None:
        return _with_entries(config, {(manager, APPLY): applied}, now, {})
    owned = owners_of(current)
    me = (manager, APPLY)
    conflicts = sorted(
        (other, path)
        for other, paths in owned.items()
        if other != me
        for path in applied
        if any(_overlaps(path, theirs) for theirs in paths)
        and value_at(current, path) != value_at(config, path)
    )
    if conflicts and not force:
        raise _conflict(conflicts, config)
    result: dict[str, Any] = clone(current)
    for other in owned:
        if other != me:
            owned[other] = {p for p in owned[other] if not any(_overlaps(p, a) for a in applied)}
    for path in owned.get(me, set()) - applied:
        if not any(path in paths for key, paths in owned.items() if key != me):
            _remove(result, path)
    for path in sorted(applied):
        _set(result, path, value_at(config, path))
    owned[me] = applied
    return _with_entries(result, owned, now, current)


def _with_entries(obj: dict[str, Any], owned: Owners, now: str, previous: dict[str, Any]) -> dict[str, Any]:
    metadata = dict(obj.get("metadata") or {})
    metadata["managedFields"] = entries(owned, str(obj.get("apiVersion", "")), now, previous)
    if not metadata["managedFields"]:
        metadata.pop("managedFields")
    return {**obj, "metadata": metadata}


def _conflict(conflicts: list[tuple[tuple[str, str], Path]], config: dict[str, Any]) -> errors.ApiError:
    version = str(config.get("apiVersion", ""))
    causes = [
        errors.FieldCause(
            "FieldManagerConflict",
            f'conflict with "{manager}"' + (" using " + version if operation == UPDATE else ""),
            "." + ".".join(path),
        )
        for (manager, operation), path in conflicts
    ]
    listed = "; ".join(f"{c.message}: {c.field}" for c in causes)
    count = f"{len(causes)} conflict" + ("s" if len(causes) > 1 else "")
    return errors.ApiError(409, "Conflict", f"Apply failed with {count}: {listed}", causes=causes)
