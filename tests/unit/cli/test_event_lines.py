"""How one audit event reads on `phalanx events watch`, and which events `--job`/`--queue` keep."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.event_lines import Selection, line, what_changed

pytestmark = pytest.mark.unit
UID = "d943fe93-e71d-4292-a252-78b0bc54dd9a"


def _event(service: str, action: str, kind: str, name: str, **data: Any) -> dict[str, Any]:
    return {
        "specversion": "1.0",
        "id": "x",
        "type": "phalanx.audit.recorded.v1",
        "time": "2026-11-25T17:36:01.598123Z",
        "data": {"service": service, "action": action, "kind": kind, "namespace": "default", "name": name}
        | data,
    }


def test_a_phase_change_says_from_which_phase_to_which() -> None:
    changed = _event(
        "controller",
        "phase-changed",
        "Job",
        "hello",
        details={"previous": "Pending", "phase": "Running", "retryCount": 0, "queue": "default"},
    )
    assert line(changed) == (
        "2026-11-25T17:36:01.598Z  controller.phase-changed    Job default/hello  Pending → Running"
    )
    first = _event("controller", "phase-changed", "Job", "hello", details={"phase": "Pending"})
    assert what_changed(first["data"]) == "(new) → Pending"
    restarted = _event(
        "controller",
        "phase-changed",
        "Job",
        "hello",
        reason="PodEvicted",
        message="Pod hello-worker-0 was evicted",
        details={"previous": "Running", "phase": "Restarting", "retryCount": 1},
    )
    assert what_changed(restarted["data"]) == (
        "Running → Restarting (retry 1) — PodEvicted: Pod hello-worker-0 was evicted"
    )


def test_a_placement_names_the_node_of_every_pod() -> None:
    placed = _event(
        "scheduler",
        "placed",
        "PodGroup",
        f"hello-{UID}",
        details={"pods": {"hello-w-0": "node-1", "hello-w-1": "node-0", "hello-w-2": "node-1"}},
    )
    assert what_changed(placed["data"]) == "3 pods on node-0 (hello-w-1), node-1 (hello-w-0, hello-w-2)"
    refused = _event(
        "controller",
        "bound",
        "PodGroup",
        f"hello-{UID}",
        outcome="failed",
        details={"pods": {"hello-w-0": "node-1"}, "refused": {"hello-w-1": "conflict"}},
    )
    assert what_changed(refused["data"]) == "1 pods on node-1 (hello-w-0); refused: hello-w-1 (conflict)"


def test_a_gang_admitted_and_placed_in_one_cycle_says_both() -> None:
    placed = _event(
        "scheduler",
        "placed",
        "PodGroup",
        "web-1",
        details={"queue": "default", "enqueued": True, "pods": {"web-1": "node-3"}},
    )
    assert what_changed(placed["data"]) == "enqueued in queue default and placed: 1 pods on node-3 (web-1)"


def test_an_eviction_says_who_was_evicted_for_whom_and_why() -> None:
    evicted = _event(
        "scheduler",
        "evicted",
        "PodGroup",
        f"low-{UID}",
        reason="preempt",
        details={"pods": ["low-w-0", "low-w-1"], "preemptor": UID, "preemptor_name": "default/high-x"},
    )
    assert what_changed(evicted["data"]) == "evicted low-w-0, low-w-1 (preempt, for default/high-x)"


def test_a_waiting_gang_and_an_admission_verdict_say_why() -> None:
    waiting = _event(
        "scheduler",
        "unschedulable",
        "PodGroup",
        f"big-{UID}",
        outcome="pending",
        reason="NotEnoughResources",
        message="3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable",
    )
    assert what_changed(waiting["data"]) == (
        "pending — NotEnoughResources: 3/3 tasks in gang unschedulable: pod group is not ready, "
        "3 Pending, 3 minAvailable"
    )
    denied = _event(
        "admission",
        "denied",
        "Job",
        "bad",
        outcome="denied",
        message="duplicated task name a",
        details={"operation": "CREATE", "user": "alice"},
    )
    assert what_changed(denied["data"]) == "denied (CREATE by alice): duplicated task name a"


@pytest.mark.parametrize(
    ("selection", "kept"),
    [
        (Selection(job="hello"), {"job", "podgroup", "plain-podgroup-named-hello"}),
        (Selection(job="default/hello"), {"job", "podgroup", "plain-podgroup-named-hello"}),
        (Selection(job="other/hello"), set()),
        (Selection(queue="team-a"), {"job", "podgroup", "queue"}),
        (Selection(type_glob="scheduler.*"), {"podgroup", "another-jobs-podgroup"}),
        (Selection(job="hello", type_glob="controller.*"), {"job", "plain-podgroup-named-hello"}),
    ],
)
def test_job_queue_and_type_filters(selection: Selection, kept: set[str]) -> None:
    events = {
        "job": _event("controller", "phase-changed", "Job", "hello", details={"queue": "team-a"}),
        "podgroup": _event("scheduler", "placed", "PodGroup", f"hello-{UID}", details={"queue": "team-a"}),
        "plain-podgroup-named-hello": _event("controller", "bound", "PodGroup", "hello", details={}),
        "another-job": _event("controller", "phase-changed", "Job", "hello-world", details={"queue": "b"}),
        "another-jobs-podgroup": _event("scheduler", "placed", "PodGroup", f"hello-world-{UID}", details={}),
        "queue": _event("admission", "admitted", "Queue", "team-a", details={}),
    }
    assert {name for name, event in events.items() if selection.admits(event)} == kept
