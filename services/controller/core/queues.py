"""Volcano's Queue state machine (Open, Closing, Closed) and its OpenQueue/CloseQueue commands.

The controller shell calls `queue_transition` when a Queue, a PodGroup in it or a Command for it
changes, with the queue's PodGroup count and its parent's state; it writes only `status.state`
(and the closed-by-parent annotation) from the result. `root` and the default queue can never be
closed (the admission webhook also refuses to delete them: `may_delete_queue`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from shared.volcano import keys
from shared.volcano.enums import Action, QueueState
from shared.volcano.objects import QueueObject

ROOT_QUEUE = "root"
DEFAULT_QUEUE = "default"
PROTECTED_QUEUES = frozenset({ROOT_QUEUE, DEFAULT_QUEUE})


@dataclass(frozen=True)
class QueueLifecycleState:
    """What the queue lifecycle reads of a queue: its state, parent, PodGroups and closing mark."""

    name: str
    state: str = QueueState.OPEN
    parent: str = ""
    podgroups: int = 0
    closed_by_parent: bool = False

    @classmethod
    def from_manifest(cls, queue: Mapping[str, Any], podgroups: int) -> QueueLifecycleState:
        view = QueueObject(queue)
        annotations = view.annotations
        return cls(
            name=str(view.name),
            state=str(view.state or QueueState.OPEN),
            parent=str(view.parent),
            podgroups=podgroups,
            closed_by_parent=annotations.get(keys.CLOSED_BY_PARENT) == "true",
        )


@dataclass(frozen=True)
class QueueEvent:
    """A Kubernetes Event on the Queue."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class QueueTransition:
    state: str
    changed: bool
    closed_by_parent: bool | None = None  # annotation value to write, None: leave it
    set_parent: str | None = None  # `root` for a queue created without a parent
    events: tuple[QueueEvent, ...] = ()
    # Children whose state follows this queue's (closed with it, or reopened with it).
    close_children: tuple[str, ...] = field(default_factory=tuple)
    open_children: tuple[str, ...] = field(default_factory=tuple)
    error: str | None = None


def _closed_state(queue: QueueLifecycleState) -> str:
    return QueueState.CLOSED if queue.podgroups == 0 else QueueState.CLOSING


_CLOSED = (QueueState.CLOSED, QueueState.CLOSING)


def _close(
    queue: QueueLifecycleState,
    current: str,
    parent_state: str | None,
    children: tuple[QueueLifecycleState, ...],
    set_parent: str | None,
) -> QueueTransition:
    if queue.name in PROTECTED_QUEUES:
        message = f"{queue.name} queue can not be closed"
        return QueueTransition(
            current,
            False,
            set_parent=set_parent,
            error=message,
            events=(QueueEvent("Warning", "CloseQueue", f"Close queue failed for {message}"),),
        )
    # A closed queue stays closed even with PodGroups left; the others drain through Closing.
    new = QueueState.CLOSED if current == QueueState.CLOSED else _closed_state(queue)
    return QueueTransition(
        new,
        new != current,
        # Closed while its parent is closed or closing: the parent did it, and will reopen it.
        closed_by_parent=True if parent_state in _CLOSED else None,
        set_parent=set_parent,
        events=(QueueEvent("Normal", "CloseQueue", "Close queue succeed"),) if new != current else (),
        close_children=()
        if current in _CLOSED
        else tuple(c.name for c in children if c.state not in _CLOSED),
    )


def _open(
    queue: QueueLifecycleState,
    current: str,
    parent_state: str | None,
    children: tuple[QueueLifecycleState, ...],
    set_parent: str | None,
) -> QueueTransition:
    if current == QueueState.OPEN:
        return QueueTransition(current, False, set_parent=set_parent)
    if queue.parent not in ("", ROOT_QUEUE) and parent_state in _CLOSED:
        message = (
            f"Failed to open queue {queue.name} because its parent queue "
            f"{queue.parent} is closing or closed. Open the parent queue first."
        )
        return QueueTransition(current, False, set_parent=set_parent, error=message)
    return QueueTransition(
        QueueState.OPEN,
        True,
        closed_by_parent=False,
        set_parent=set_parent,
        open_children=tuple(c.name for c in children if c.closed_by_parent),
    )


def queue_transition(
    queue: QueueLifecycleState,
    action: str = Action.SYNC_QUEUE,
    *,
    parent_state: str | None = None,
    children: tuple[QueueLifecycleState, ...] = (),
) -> QueueTransition:
    """One request of Volcano's queue controller: SyncQueue, OpenQueue or CloseQueue.

    `children` are the queues whose parent this is: a close closes those still open, an open
    reopens those its close had closed. On SyncQueue the parent's state is followed at once
    (Volcano enqueues a CloseQueue/OpenQueue for the child; the outcome is the same).
    """
    current = queue.state or QueueState.OPEN
    set_parent = ROOT_QUEUE if not queue.parent and queue.name != ROOT_QUEUE else None
    if action == Action.CLOSE_QUEUE:
        return _close(queue, current, parent_state, children, set_parent)
    if action == Action.OPEN_QUEUE:
        return _open(queue, current, parent_state, children, set_parent)
    # SyncQueue: only a closing queue moves by itself, once its last PodGroup is gone.
    new = current
    if current == QueueState.CLOSING and queue.podgroups == 0:
        new = QueueState.CLOSED
    if queue.name != ROOT_QUEUE and parent_state in _CLOSED and new not in _CLOSED:
        closing = _close(queue, current, parent_state, children, set_parent)
        return replace(closing, closed_by_parent=True)
    if parent_state == QueueState.OPEN and queue.closed_by_parent and new in _CLOSED:
        return _open(queue, current, parent_state, children, set_parent)
    return QueueTransition(new, new != current, set_parent=set_parent)


def may_delete_queue(name: str) -> bool:
    """`root` and `default` are never deleted."""
    return name not in PROTECTED_QUEUES


def queue_status_patch(transition: QueueTransition) -> dict[str, Any]:
    """The status the shell writes (server-side apply of `status.state` only)."""
    return {"status": {"state": transition.state}}
