"""Pure: what a Job's phase change becomes — its `job_records` row and the messages announcing it.

Sits between the lifecycle's `transition` (lifecycle.py), whose before and after states the job
driver (jobs.py) compares, and the batched write of `job_phase_records.py`, which upserts the row
and puts the messages into the controller's outbox in one transaction. The event id is stable for
one phase change (job uid, phase, version, retry count), so a redone write is dropped as a
duplicate downstream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.controller.core.jobstate import ObservedJob
from shared.messages import subjects
from shared.messages.audit import AuditRecorded, audit_event
from shared.messages.envelope import CloudEvent, new_event
from shared.messages.jobs import JobPhaseChanged

SOURCE = "phalanx/controller"


@dataclass(frozen=True)
class JobPhaseRecord:
    row: dict[str, Any]  # the job's `job_records` row
    events: list[tuple[str, CloudEvent[Any]]]  # `jobs.*` and `audit.*`, by subject


def job_phase_record(before: ObservedJob, after: ObservedJob) -> JobPhaseRecord:
    phase = str(after.status.phase)
    data = JobPhaseChanged(
        namespace=after.namespace,
        name=after.name,
        uid=after.uid,
        previous=str(before.status.phase) or None,
        phase=phase,
        reason=after.status.reason or "",
        message=after.status.message or "",
        retry_count=after.status.retry_count,
    )
    event_id = f"{after.uid}:{phase}:{after.status.version}:{after.status.retry_count}"
    audit = AuditRecorded(
        service="controller",
        action="phase-changed",
        kind="Job",
        namespace=after.namespace,
        name=after.name,
        uid=after.uid,
        reason=data.reason,
        message=data.message,
        details={
            "previous": data.previous,
            "phase": phase,
            "retryCount": data.retry_count,
            "queue": after.queue,
        },
    )
    row: dict[str, Any] = {
        "uid": after.uid,
        "namespace": after.namespace,
        "name": after.name,
        "phase": phase,
        "retry_count": after.status.retry_count,
        "version": after.status.version,
        "state": {"timers": [t.key for t in after.timers]},
    }
    events: list[tuple[str, CloudEvent[Any]]] = [
        (
            subjects.job_event("phase", after.namespace, after.name),
            new_event(data, source=SOURCE, event_id=event_id, subject=f"{after.namespace}/{after.name}"),
        ),
        audit_event(audit, event_id=f"audit:{event_id}"),
    ]
    return JobPhaseRecord(row, events)
