"""The change feed: one event per write, kept per resource type for watch resumption.

The store appends every committed write here, numbered by the cluster-wide resourceVersion.
A watch that starts from an older version replays what is kept; when the events it needs have
already been dropped from the bounded buffer it gets 410 Gone, as from a compacted etcd.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import orjson

from services.simulator.store.api_resources import Kind
from services.simulator.store.errors import gone


@dataclass(slots=True)
class WatchEvent:
    """One committed change. `old` is the object before a MODIFIED or DELETED write."""

    resource_version: int
    type: str
    kind: Kind
    object: dict[str, Any]
    old: dict[str, Any] | None = None
    _line: bytes | None = field(default=None, repr=False)

    def line(self) -> bytes:
        """The watch stream's JSON line, encoded once however many watchers send it."""
        if self._line is None:
            self._line = orjson.dumps({"type": self.type, "object": self.object}) + b"\n"
        return self._line


class History:
    """Bounded per-kind event buffers and the highest version each one has dropped."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._events: dict[Kind, deque[WatchEvent]] = {}
        self._dropped_up_to: dict[Kind, int] = {}

    def append(self, event: WatchEvent) -> None:
        events = self._events.get(event.kind)
        if events is None:
            events = self._events[event.kind] = deque(maxlen=self._capacity)
        if len(events) == self._capacity:
            self._dropped_up_to[event.kind] = events[0].resource_version
        events.append(event)

    def since(self, kind: Kind, resource_version: int) -> list[WatchEvent]:
        """Events of `kind` newer than `resource_version`; 410 when some were already dropped."""
        dropped = self._dropped_up_to.get(kind, 0)
        if resource_version < dropped:
            raise gone(f"too old resource version: {resource_version} ({dropped + 1})")
        events = self._events.get(kind)
        if not events:
            return []
        if events[0].resource_version > resource_version:
            return list(events)
        return [e for e in events if e.resource_version > resource_version]

    def oldest_kept(self, kind: Kind) -> int:
        return self._dropped_up_to.get(kind, 0)
