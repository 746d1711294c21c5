"""The lost-event check (reliability.md §6 T6, T13): the scheduler's view of the cluster against
the cluster itself, every projected table at once.

The scheduler keeps one row per object of the kinds it ingests (services/scheduler/ingest.py),
stamped with the object's resourceVersion. Once the stack is quiet, every object the watcher
publishes must have its row at that same version, and every live row an object: a row the
cluster no longer has is a deletion missed in a watch gap, one at an older version a missed
update. Pure functions over plain data: the test reads the objects from the simulated API server
and the rows from PostgreSQL and hands both here.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from services.scheduler.projection import SCHEDULER_CONF_KEY
from services.scheduler.row_tables import TABLE_OF_KIND
from services.scheduler.storage_rows import STORAGE_KINDS, storage_key
from services.watcher.translate import SCHEDULER_CONF_MAP, is_relevant, view_of

View = dict[str, dict[str, int]]  # table -> row key -> resourceVersion
KEYED_BY_UID = frozenset({"PodGroup", "Pod", "PodDisruptionBudget"})


def _key(kind: str, obj: Mapping[str, Any]) -> str | None:
    meta = obj.get("metadata") or {}
    if kind in STORAGE_KINDS:
        return storage_key(kind, meta.get("namespace") or "", meta["name"])
    if kind == "ConfigMap":
        has_conf = SCHEDULER_CONF_KEY in (obj.get("data") or {})
        return SCHEDULER_CONF_KEY if meta.get("name") == SCHEDULER_CONF_MAP and has_conf else None
    return str(meta["uid"] if kind in KEYED_BY_UID else meta["name"])


def expected(objects: Mapping[str, Iterable[Mapping[str, Any]]], scheduler_names: Collection[str]) -> View:
    """What the tables should hold for the cluster's `objects` (kind -> its objects)."""
    view: View = {str(TABLE_OF_KIND[kind].__tablename__): {} for kind in TABLE_OF_KIND}
    for kind, found in objects.items():
        table = str(TABLE_OF_KIND[kind].__tablename__)
        for obj in found:
            key = _key(kind, obj)
            if key is not None and is_relevant(kind, view_of(kind, dict(obj)), scheduler_names):
                view[table][key] = int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    return view


def diff(cluster: View, tables: View) -> list[str]:
    """Every way the tables' live rows differ from the cluster: missing, lingering or stale."""
    found: list[str] = []
    for table in sorted(set(cluster) | set(tables)):
        want, have = cluster.get(table, {}), tables.get(table, {})
        found += [
            f"{table}: {key} is in the cluster but has no live row" for key in sorted(set(want) - set(have))
        ]
        found += [
            f"{table}: {key} lingers, deleted from the cluster (row at version {have[key]})"
            for key in sorted(set(have) - set(want))
        ]
        found += [
            f"{table}: {key} at version {have[key]}, the cluster's is {want[key]}"
            for key in sorted(set(want) & set(have))
            if want[key] != have[key]
        ]
    return found
