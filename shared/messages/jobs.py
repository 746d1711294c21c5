"""Lifecycle events the controller publishes about Volcano Jobs (controller → anyone)."""

from __future__ import annotations

from shared.messages.envelope import EventData, event_type


@event_type("phalanx.jobs.phase.changed.v1")
class JobPhaseChanged(EventData):
    namespace: str
    name: str
    uid: str
    previous: str | None
    phase: str
    reason: str = ""
    message: str = ""
    retry_count: int = 0
