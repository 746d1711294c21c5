"""A PodGroup's conditions and when its status is worth writing (podgroup_status_writes.py)."""

from __future__ import annotations

import pytest

from services.controller.podgroup_status_writes import _same_status, _with_condition, new_condition

pytestmark = pytest.mark.unit


def test_scheduled_replaces_unschedulable_and_other_types_stay() -> None:
    held = [new_condition("Unschedulable", "NotEnoughResources", "0/2 nodes"), {"type": "Other"}]
    scheduled = new_condition("Scheduled", "tasks in gang are ready to be scheduled", "")
    assert [c["type"] for c in _with_condition(held, scheduled)] == ["Other", "Scheduled"]


def test_an_unchanged_condition_keeps_its_time_so_the_status_does_not_churn() -> None:
    held = new_condition("Unschedulable", "NotEnoughResources", "0/2 nodes")
    again = {
        **new_condition("Unschedulable", "NotEnoughResources", "0/2 nodes"),
        "lastTransitionTime": "later",
    }
    assert _with_condition([held], again) == [held]
    changed = new_condition("Unschedulable", "NotEnoughResources", "0/3 nodes")
    assert _with_condition([held], changed) == [changed]


def test_absent_counters_read_as_zero_and_a_new_phase_is_a_change() -> None:
    assert _same_status({"phase": "Pending"}, {"phase": "Pending", "running": 0, "conditions": []})
    assert not _same_status({"phase": "Pending"}, {"phase": "Inqueue"})
    assert not _same_status({"phase": "Running", "running": 1}, {"phase": "Running", "running": 2})
