"""The audit stream: one event per decision any service makes (`audit.<service>.<action>.<ns>.<name>`).

Anyone can subscribe (`phalanx events watch`, or any NATS client on `audit.>`). Actions are past
tense: admitted, denied, enqueued, placed, unschedulable, bound, evicted, phase-changed, ...
"""

from __future__ import annotations

from typing import Any, Literal

from shared.messages.envelope import EventData, event_type


@event_type("phalanx.audit.recorded.v1")
class AuditRecorded(EventData):
    service: Literal["watcher", "admission", "controller", "scheduler"]
    action: str
    kind: str
    namespace: str | None = None
    name: str
    uid: str | None = None
    outcome: Literal["allowed", "denied", "done", "failed", "pending"] = "done"
    reason: str = ""
    message: str = ""
    details: dict[str, Any] = {}
