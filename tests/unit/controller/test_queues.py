"""Volcano's queue state machine and queue commands."""

from __future__ import annotations

import pytest

from services.controller.core.queues import (
    QueueLifecycleState,
    may_delete_queue,
    queue_status_patch,
    queue_transition,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("state", "action", "podgroups", "expected"),
    [
        ("Open", "OpenQueue", 0, "Open"),
        ("Open", "CloseQueue", 0, "Closed"),
        ("Open", "CloseQueue", 2, "Closing"),
        ("Open", "SyncQueue", 2, "Open"),
        ("", "SyncQueue", 0, "Open"),
        ("Closed", "OpenQueue", 0, "Open"),
        ("Closed", "CloseQueue", 0, "Closed"),
        ("Closed", "CloseQueue", 2, "Closed"),
        ("Closed", "SyncQueue", 3, "Closed"),
        ("Closing", "OpenQueue", 1, "Open"),
        ("Closing", "CloseQueue", 1, "Closing"),
        ("Closing", "CloseQueue", 0, "Closed"),
        ("Closing", "SyncQueue", 1, "Closing"),
        ("Closing", "SyncQueue", 0, "Closed"),
        ("Unknown", "OpenQueue", 0, "Open"),
        ("Unknown", "CloseQueue", 1, "Closing"),
        ("Unknown", "SyncQueue", 0, "Unknown"),
    ],
    ids=lambda v: str(v) if not isinstance(v, int) else f"pg{v}",
)
def test_queue_state_table(state: str, action: str, podgroups: int, expected: str) -> None:
    queue = QueueLifecycleState("q1", state or "Open", parent="root", podgroups=podgroups)
    result = queue_transition(queue, action, parent_state="Open")
    assert result.state == expected
    assert result.changed == (expected != (state or "Open"))


@pytest.mark.parametrize("name", ["root", "default"])
def test_protected_queues_cannot_be_closed_or_deleted(name: str) -> None:
    result = queue_transition(QueueLifecycleState(name, "Open"), "CloseQueue")
    assert result.state == "Open"
    assert result.error is not None
    assert not may_delete_queue(name)
    assert may_delete_queue("team-a")


def test_close_records_the_event_and_closes_open_children() -> None:
    children = (QueueLifecycleState("c1", "Open", "q1"), QueueLifecycleState("c2", "Closed", "q1"))
    result = queue_transition(QueueLifecycleState("q1", "Open", "root"), "CloseQueue", children=children)
    assert result.events[0].message == "Close queue succeed"
    assert result.close_children == ("c1",)


def test_closing_an_already_closed_queue_says_nothing() -> None:
    result = queue_transition(QueueLifecycleState("q1", "Closed", "root"), "CloseQueue")
    assert result.events == ()
    assert result.close_children == ()


def test_opening_an_open_queue_changes_nothing() -> None:
    result = queue_transition(QueueLifecycleState("q1", "Open", "p"), "OpenQueue", parent_state="Closed")
    assert (result.state, result.changed, result.error) == ("Open", False, None)


def test_open_fails_under_a_closed_parent() -> None:
    result = queue_transition(QueueLifecycleState("q1", "Closed", "p"), "OpenQueue", parent_state="Closing")
    assert result.state == "Closed"
    assert result.error == (
        "Failed to open queue q1 because its parent queue p is closing or "
        "closed. Open the parent queue first."
    )


def test_open_clears_closed_by_parent_and_reopens_those_children() -> None:
    children = (
        QueueLifecycleState("c1", "Closed", "q1", closed_by_parent=True),
        QueueLifecycleState("c2", "Closed", "q1"),
    )
    result = queue_transition(
        QueueLifecycleState("q1", "Closed", "root"), "OpenQueue", parent_state="Open", children=children
    )
    assert result.closed_by_parent is False
    assert result.open_children == ("c1",)


@pytest.mark.parametrize(
    ("queue", "parent_state", "expected", "marked"),
    [
        (QueueLifecycleState("c", "Open", "p", podgroups=1), "Closing", "Closing", True),
        (QueueLifecycleState("c", "Open", "p"), "Closed", "Closed", True),
        (QueueLifecycleState("c", "Closed", "p", closed_by_parent=True), "Open", "Open", False),
        (QueueLifecycleState("c", "Closed", "p"), "Open", "Closed", None),
    ],
    ids=["parent-closing", "parent-closed", "parent-reopened", "closed-by-user-stays"],
)
def test_children_follow_their_parent(
    queue: QueueLifecycleState, parent_state: str, expected: str, marked: bool | None
) -> None:
    result = queue_transition(queue, parent_state=parent_state)
    assert result.state == expected
    assert result.closed_by_parent == marked


def test_queue_without_parent_is_put_under_root() -> None:
    assert queue_transition(QueueLifecycleState("q1")).set_parent == "root"
    assert queue_transition(QueueLifecycleState("root")).set_parent is None


def test_status_patch_writes_only_the_state() -> None:
    result = queue_transition(QueueLifecycleState("q1", "Open", "root"), "CloseQueue")
    assert queue_status_patch(result) == {"status": {"state": "Closed"}}
