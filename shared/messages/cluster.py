"""Events the watcher publishes about Kubernetes objects (watcher → scheduler ingest, controller).

`ObjectChanged` carries the object as the API returned it, less what no consumer reads (environment,
commands, managedFields: see `trimmed`), keyed by uid and resourceVersion
(its event id is `<uid>:<resourceVersion>:<change>`, so a relist republishes nothing new).
`KindResynced` closes a relist: objects of that kind last seen before it, and not in it, are gone.
"""

from __future__ import annotations

from typing import Any, Literal

from shared.messages.envelope import EventData, event_type

Change = Literal["ADDED", "MODIFIED", "DELETED"]


@event_type("phalanx.cluster.object.changed.v1")
class ObjectChanged(EventData):
    kind: str
    namespace: str | None = None
    name: str
    uid: str
    resource_version: int
    change: Change
    relist_id: str | None = None
    object: dict[str, Any]
    # What the watcher cut from `object` (services/watcher/trim.py), as field paths.
    trimmed: list[str] = []
    # False when `object` is only the identity of an object too large for the bus: a consumer
    # that needs the rest reads it from the API (docs/poison.md).
    complete: bool = True


@event_type("phalanx.cluster.kind.resynced.v1")
class KindResynced(EventData):
    """Every object of `kind` that exists was published with `relist_id` before this marker."""

    kind: str
    relist_id: str
    resource_version: int
