"""Gang events and PodGroup conditions as Volcano words them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.controller.core.gang_events import (
    ObjectEvent,
    scheduled_condition,
    scheduled_event,
    unschedulable_condition,
    unschedulable_event,
    upsert_condition,
    victim_events,
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


def test_an_evicted_pod_gets_evict_and_its_podgroup_a_normal_evict() -> None:
    pod = {"metadata": {"name": "job-w-0", "namespace": "ns", "uid": "p1"}}
    events = victim_events(pod, PG, reason="release", node="n1", preemptor=None)
    assert [(o["kind"], o["metadata"]["name"], t, r, m) for o, t, r, m in events] == [
        ("Pod", "job-w-0", "Warning", "Evict", "Pod is evicted, because of release"),
        ("PodGroup", "job-u1", "Normal", "Evict", "release"),
    ]
    assert events[0][0]["apiVersion"] == "v1"
    assert events[1][0]["apiVersion"] == "scheduling.volcano.sh/v1beta1"


def test_a_preempted_pod_and_its_job_say_who_took_the_room() -> None:
    owner = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": "job",
        "uid": "j1",
        "controller": True,
    }
    pod = {"metadata": {"name": "job-w-0", "namespace": "ns", "uid": "p1", "ownerReferences": [owner]}}
    events = victim_events(pod, None, reason="preempt", node="n1", preemptor="ns/high")
    assert [(o["kind"], t, r, m) for o, t, r, m in events] == [
        ("Pod", "Warning", "Evict", "Pod is evicted, because of preempt"),
        ("Pod", "Normal", "Preempted", "Preempted by pod group ns/high on node n1"),
        ("Job", "Normal", "Preempted", "Pod job-w-0 preempted by pod group ns/high on node n1"),
    ]
    job = events[2][0]
    assert job == {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "job", "namespace": "ns", "uid": "j1"},
    }


def test_condition_upsert_by_type_ignores_time_and_session() -> None:
    first = upsert_condition({"phase": "Pending"}, unschedulable_condition("a", "s1", NOW))
    same = upsert_condition(first, unschedulable_condition("a", "s2", NOW + timedelta(1)))
    assert same == first
    changed = upsert_condition(first, unschedulable_condition("b", "s3", NOW))
    assert [c["message"] for c in changed["conditions"]] == ["b"]
    both = upsert_condition(changed, scheduled_condition("s4", NOW))
    assert [c["type"] for c in both["conditions"]] == ["Unschedulable", "Scheduled"]
    assert both["conditions"][1]["reason"] == "tasks in gang are ready to be scheduled"
