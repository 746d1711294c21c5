"""Job status as Volcano writes it: an `ObservedJobStatus` rendered as a batch.volcano.sh Job's `status`.

The last step of a transition: `lifecycle` puts `job_status(state)` into its UpdateJobStatus
effect. Zero counters and empty maps are left out, as Go's `omitempty` does, so a status we
write compares equal to one Volcano would have written.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from services.controller.core.jobstate import ObservedJob, ObservedJobStatus
from services.controller.core.policies import format_go_duration


def format_time(moment: datetime) -> str:
    """metav1.Time: RFC 3339 in UTC with second precision."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def status_dict(status: ObservedJobStatus) -> dict[str, Any]:
    state: dict[str, Any] = {}
    if status.phase:
        state["phase"] = status.phase
    if status.reason:
        state["reason"] = status.reason
    if status.message:
        state["message"] = status.message
    if status.last_transition_time is not None:
        state["lastTransitionTime"] = format_time(status.last_transition_time)
    out: dict[str, Any] = {"state": state}
    counters = {
        "minAvailable": status.min_available,
        "pending": status.pending,
        "running": status.running,
        "succeeded": status.succeeded,
        "failed": status.failed,
        "terminating": status.terminating,
        "unknown": status.unknown,
        "version": status.version,
        "retryCount": status.retry_count,
    }
    out.update({key: value for key, value in counters.items() if value})
    task_counts = {
        task: {"phase": {phase: n for phase, n in counts.items() if n}}
        for task, counts in sorted(status.task_status_count.items())
    }
    if task_counts:
        out["taskStatusCount"] = task_counts
    if status.running_duration is not None:
        out["runningDuration"] = format_go_duration(status.running_duration)
    if status.controlled_resources:
        out["controlledResources"] = dict(sorted(status.controlled_resources.items()))
    if status.conditions:
        out["conditions"] = [
            {"status": c.status, "lastTransitionTime": format_time(c.last_transition_time)}
            for c in status.conditions
        ]
    return out


def job_status(state: ObservedJob) -> dict[str, Any]:
    """The `status` object of the Job for this state."""
    return status_dict(state.status)
