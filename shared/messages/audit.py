"""The audit stream: one event per decision any service makes (`audit.<service>.<action>.<ns>.<name>`).

Anyone can subscribe (`phalanx events watch`, or any NATS client on `audit.>`). Actions are past
tense: admitted, denied, enqueued, placed, unschedulable, bound, evicted, phase-changed, ...

`audit_event` is the one place a record becomes a message: its subject (from the record's service,
action, namespace and name) and its envelope (source `phalanx/<service>`, the caller's stable id).
"""

from __future__ import annotations

from typing import Any, Literal

from shared.messages import subjects
from shared.messages.envelope import CloudEvent, EventData, event_type, new_event


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


def audit_event(
    record: AuditRecorded, *, event_id: str, traceparent: str | None = None, filed_under: str | None = None
) -> tuple[str, CloudEvent[AuditRecorded]]:
    """The subject and the event that carry `record` on the audit stream.

    `event_id` must be stable for one decision (a retry republishes the same id, and the bus drops
    it as a duplicate); by convention it starts with `audit:` or the service's name. The subject
    ends with the record's name, or `filed_under` (a dead letter is filed under its consumer).
    """
    name = filed_under or record.name or "-"
    subject = subjects.audit(record.service, record.action, record.namespace, name)
    event = new_event(record, source=f"phalanx/{record.service}", event_id=event_id, traceparent=traceparent)
    return subject, event
