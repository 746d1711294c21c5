"""Scheduling gates (`spec.schedulingGates`): a gated pod is not scheduled until its gates go.

`build_context` leaves a gang's gated, still pending tasks out of the cycle: they are never
placed, their requests count towards no queue, and they do not make the gang's `minMember`.
A gang that cannot reach its minimum without them is held back whole (`gate_problem`): it is
not enqueued, not allocated, and an admitted one keeps no room in its queue, so it blocks
nobody; its PodGroup says why, in kube-scheduler's words. Removing the gates (an update of the
pods) brings the tasks back in the next cycle.
"""

from __future__ import annotations

from collections.abc import Iterable

from services.scheduler.core.snapshot import PENDING, GangInfo, TaskInfo

SCHEDULING_GATED = "SchedulingGated"
# kube-scheduler's message for a pod held by its gates (condition PodScheduled, reason
# SchedulingGated).
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def gated_waiting(tasks: Iterable[TaskInfo]) -> frozenset[str]:
    """Uids of the tasks still waiting on their gates (a bound pod's gates no longer matter)."""
    return frozenset(t.uid for t in tasks if t.scheduling_gated and t.status == PENDING and not t.node)


def gate_problem(gang: GangInfo, ungated: int, gated: int) -> tuple[str, str] | None:
    """(reason, message) when the gang's ungated tasks cannot make its minimum, else None."""
    if ungated >= gang.min_member:
        return None
    return (
        SCHEDULING_GATED,
        f"{gated}/{gated + ungated} tasks in gang are gated, {gang.min_member} minAvailable: {GATED_MESSAGE}",
    )
