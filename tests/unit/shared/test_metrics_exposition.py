"""What `/metrics` serves: Volcano's counters that carry no `_total` keep their own names."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from services.controller.metrics import JOB_COMPLETED
from services.scheduler.metrics import PREEMPTION_ATTEMPTS
from shared.metrics import exposition

pytestmark = pytest.mark.unit


def test_bare_counters_are_typed_counters_under_volcanos_names() -> None:
    PREEMPTION_ATTEMPTS.inc(2)
    JOB_COMPLETED.inc(1, "ns/job", "team")
    text = exposition().decode()

    assert "# TYPE volcano_total_preemption_attempts counter" in text
    assert "volcano_total_preemption_attempts_total" not in text
    assert 'volcano_job_completed_phase_count{job_name="ns/job",queue_name="team"} ' in text
    # A Prometheus parser reads the family whole: the samples belong to the typed family.
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["volcano_total_preemption_attempts"].type == "counter"
    assert "volcano_schedule_attempts" in families  # prometheus_client's own counters are untouched


def test_bare_counter_refuses_to_go_down_and_wrong_labels() -> None:
    with pytest.raises(ValueError, match="only goes up"):
        PREEMPTION_ATTEMPTS.inc(-1)
    with pytest.raises(ValueError, match="takes labels"):
        JOB_COMPLETED.inc(1, "only-one")
