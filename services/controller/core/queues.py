"""Volcano's Queue state machine (Open, Closing, Closed) and its OpenQueue/CloseQueue commands.

The controller shell calls `queue_transition` when a Queue, a PodGroup in it or a Command for it
changes, with the queue's PodGroup count and its parent's state; it writes only `status.state`
(and the closed-by-parent annotation) from the result. `root` and the default queue can never be
closed (the admission webhook also refuses to delete them: `may_delete_queue`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from services.controller.core import keys
from shared.volcano.enums import Action, QueueState

ROOT_QUEUE = "root"
DEFAULT_QUEUE = "default"
PROTECTED_QUEUES = frozenset({ROOT_QUEUE, DEFAULT_QUEUE})


@dataclass(frozen=True)
class QueueView:
    name: str
    state: str = QueueState.OPEN
    parent: str = ""
    podgroups: int = 0
    closed_by_parent: bool = False

    @classmethod
    def from_manifest(cls, queue: Mapping[str, Any], podgroups: int) -> QueueView:
        meta = queue.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        return cls(
            name=str(meta.get("name", "")),
            state=str((queue.get("status") or {}).get("state") or QueueState.OPEN),
            parent=str((queue.get("spec") or {}).get("parent") or ""),
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


def _closed_state(queue: QueueView) -> str:
    return QueueState.CLOSED if queue.podgroups == 0 else QueueState.CLOSING


def queue_transition(
    queue: QueueView,
    action: str = Action.SYNC_QUEUE,
    *,
    parent_state: str | None = None,
    children: tuple[QueueView, ...] = (),
) -> QueueTransition:
    """One request of Volcano's queue controller: SyncQueue, OpenQueue or CloseQueue."""
    current = queue.state or QueueState.OPEN
    set_parent = ROOT_QUEUE if not queue.parent and queue.name != ROOT_QUEUE else None
    if action == Action.CLOSE_QUEUE:
        if queue.name in PROTECTED_QUEUES:
            message = f"{queue.name} queue can not be closed"
            return QueueTransition(
                current,
                False,
                set_parent=set_parent,
                events=(QueueEvent("Warning", "CloseQueue", f"Close queue failed for {message}"),),
                error=message,
            )
        new = _closed_state(queue)
        return QueueTransition(
            new,
            new != current,
            set_parent=set_parent,
            events=(QueueEvent("Normal", "CloseQueue", "Close queue succeed"),),
            close_children=tuple(
                c.name for c in children if c.state not in (QueueState.CLOSED, QueueState.CLOSING)
            ),
        )
    if action == Action.OPEN_QUEUE:
        if parent_state in (QueueState.CLOSED, QueueState.CLOSING):
            message = (
                f"Failed to open queue {queue.name} because its parent queue "
                f"{queue.parent} is closing or closed. Open the parent queue first."
            )
            return QueueTransition(
                current,
                False,
                set_parent=set_parent,
                error=message,
                events=(QueueEvent("Warning", "OpenQueue", message),),
            )
        return QueueTransition(
            QueueState.OPEN,
            current != QueueState.OPEN,
            closed_by_parent=False,
            set_parent=set_parent,
            open_children=tuple(c.name for c in children if c.closed_by_parent),
        )
    # SyncQueue: a closing queue closes once its last PodGroup is gone; the parent rules.
    new = current
    if current == QueueState.CLOSING and queue.podgroups == 0:
        new = QueueState.CLOSED
    closed_by_parent: bool | None = None
    if parent_state in (QueueState.CLOSED, QueueState.CLOSING) and new not in (
        QueueState.CLOSED,
        QueueState.CLOSING,
    ):
        new, closed_by_parent = _closed_state(queue), True
    elif parent_state == QueueState.OPEN and queue.closed_by_parent and new != QueueState.OPEN:
        new, closed_by_parent = QueueState.OPEN, False
    return QueueTransition(new, new != current, closed_by_parent=closed_by_parent, set_parent=set_parent)


def may_delete_queue(name: str) -> bool:
    """`root` and `default` are never deleted."""
    return name not in PROTECTED_QUEUES


def queue_status_patch(transition: QueueTransition) -> dict[str, Any]:
    """The status the shell writes (server-side apply of `status.state` only)."""
    return {"status": {"state": transition.state}}
