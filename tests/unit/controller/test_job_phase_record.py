"""A Job's phase change as its `job_records` row and announcements (core/job_phase_record.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from services.controller.core.job_phase_record import job_phase_record
from tests.unit.controller.builders import state

pytestmark = pytest.mark.unit


def test_a_restarted_job_is_one_row_and_a_phase_and_audit_message_with_one_id() -> None:
    before = state("Running")
    after = state("Restarting", retry=1, version=2)
    after = replace(after, status=replace(after.status, reason="PodFailed", message="pod failed"))

    record = job_phase_record(before, after)

    assert record.row == {
        "uid": "uid-1",
        "namespace": "ns",
        "name": "job",
        "phase": "Restarting",
        "retry_count": 1,
        "version": 2,
        "state": {"timers": []},
    }
    (phase_subject, phase), (audit_subject, audit) = record.events
    assert phase_subject.startswith("jobs.")
    assert audit_subject.startswith("audit.")
    assert phase.id == "uid-1:Restarting:2:1"
    assert audit.id == "audit:uid-1:Restarting:2:1"
    assert (phase.data.previous, phase.data.phase, phase.data.reason) == (
        "Running",
        "Restarting",
        "PodFailed",
    )
    assert audit.data.details == {
        "previous": "Running",
        "phase": "Restarting",
        "retryCount": 1,
        "queue": "default",
    }


def test_a_new_job_has_no_previous_phase() -> None:
    record = job_phase_record(state(""), state("Pending", podgroup=None))
    assert record.events[0][1].data.previous is None
