"""Gang events and PodGroup conditions as Volcano words them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.controller.core.gang_events import (
    ObjectEvent,
    evict_events,
    scheduled_condition,
    scheduled_event,
    unschedulable_condition,
    unschedulable_event,
    upsert_condition,
)

pytestmark = pytest.mark.unit
PG = {"metadata": {"name": "job-u1", "namespace": "ns"}}
NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
FIT = "pod group is not ready, 3 Pending, 3 minAvailable; Pending: 3 Unschedulable."


def test_unschedulable_and_scheduled_events() -> None:
    assert unschedulable_event(PG, 3, 3, FIT) == ObjectEvent(
        "PodGroup", "ns", "job-u1", "Warning", "Unschedulable", f"3/3 tasks in gang unschedulable: {FIT}"
    )
    assert scheduled_event(PG).message == "pod group is ready"


def test_evict_events_on_pod_and_podgroup() -> None:
    pod = {"metadata": {"name": "job-w-0", "namespace": "ns"}}
    assert evict_events(pod, "job-u1", "preempt") == (
        ObjectEvent("Pod", "ns", "job-w-0", "Warning", "Evict", "Pod is evicted, because of preempt"),
        ObjectEvent("PodGroup", "ns", "job-u1", "Normal", "Evict", "preempt"),
    )
    assert len(evict_events(pod, None, "reclaim")) == 1


def test_condition_upsert_by_type_ignores_time_and_session() -> None:
    first = upsert_condition({"phase": "Pending"}, unschedulable_condition("a", "s1", NOW))
    same = upsert_condition(first, unschedulable_condition("a", "s2", NOW + timedelta(1)))
    assert same == first
    changed = upsert_condition(first, unschedulable_condition("b", "s3", NOW))
    assert [c["message"] for c in changed["conditions"]] == ["b"]
    both = upsert_condition(changed, scheduled_condition("s4", NOW))
    assert [c["type"] for c in both["conditions"]] == ["Unschedulable", "Scheduled"]
    assert both["conditions"][1]["reason"] == "tasks in gang are ready to be scheduled"
