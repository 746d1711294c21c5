"""The one place an audit record becomes a message (shared/messages/audit.py: audit_event)."""

from __future__ import annotations

import pytest

from shared.messages.audit import AuditRecorded, audit_event

pytestmark = pytest.mark.unit


def test_the_subject_names_service_action_and_object_and_the_source_the_service() -> None:
    record = AuditRecorded(
        service="controller", action="evicted", kind="PodGroup", namespace="ns", name="pg.1"
    )
    subject, event = audit_event(record, event_id="audit:1", traceparent="00-abc-def-01")
    assert subject == "audit.controller.evicted.ns.pg%2E1"
    assert (event.id, event.source, event.traceparent, event.data) == (
        "audit:1",
        "phalanx/controller",
        "00-abc-def-01",
        record,
    )


def test_a_cluster_scoped_or_nameless_record_still_gets_a_legal_subject() -> None:
    record = AuditRecorded(service="admission", action="denied", kind="Queue", name="")
    subject, _ = audit_event(record, event_id="admission:u1")
    assert subject.startswith("audit.admission.denied.")
    assert subject.endswith(".-")


def test_a_dead_letter_is_filed_under_its_consumer() -> None:
    record = AuditRecorded(
        service="scheduler", action="dead-lettered", kind="Message", name="cluster.pod.a.b"
    )
    subject, _ = audit_event(record, event_id="audit:dlq:x", filed_under="scheduler-ingest")
    assert subject.endswith(".scheduler-ingest")
