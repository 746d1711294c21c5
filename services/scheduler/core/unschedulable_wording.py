"""Volcano's wording for a gang that was not placed, built at the end of a cycle.

Mirrors gang's OnSessionClose and JobInfo.FitError: the PodGroup Unschedulable condition message
"<n>/<tasks> tasks in gang unschedulable: pod group is not ready, <status histogram>,
<min> minAvailable; Pending: <reasons>. Origin reason is <task>: <node fit errors>", where the
histograms are "<count> <name>" strings sorted as Go's sort.Strings sorts them.
"""

from __future__ import annotations

from collections import Counter

from services.scheduler.core.plan import GangVerdict
from services.scheduler.core.snapshot import PENDING
from services.scheduler.core.state import GangView

NOT_ENOUGH_RESOURCES = "NotEnoughResources"
NOT_ENOUGH_TASKS = "NotEnoughTasks"
NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"


def _histogram(counts: Counter[str]) -> str:
    return ", ".join(sorted(f"{count} {name}" for name, count in counts.items()))


def fit_error(gang: GangView) -> str:
    """JobInfo.FitError: readiness, task statuses, pending reasons and the origin reason."""
    statuses: Counter[str] = Counter(task.status for task in gang.tasks)
    statuses["minAvailable"] = gang.info.min_member
    state = "pod group is ready" if gang.is_ready() else "pod group is not ready"
    message = f"{state}, {_histogram(statuses)}"
    pending: Counter[str] = Counter(
        "Schedulable" if task.schedulable else "Unschedulable"
        for task in gang.tasks
        if task.status == PENDING
    )
    if pending:
        message += f"; Pending: {_histogram(pending)}"
    if gang.job_fit_error:
        message += f". Origin reason is: {gang.job_fit_error}"
    else:
        for task in gang.tasks:
            if task.fit_error is not None:
                message += f". Origin reason is {task.info.name}: {task.fit_error}"
                break
    return message


def unschedulable_message(gang: GangView) -> str:
    """The Unschedulable condition message gang's OnSessionClose writes."""
    schedulable = sum(1 for t in gang.tasks if t.status == PENDING and t.schedulable)
    unready = gang.info.min_member - (schedulable + gang.ready)
    return f"{unready}/{len(gang.tasks)} tasks in gang unschedulable: {fit_error(gang)}"


def verdict(gang: GangView, reason: str, condition_reason: str = NOT_ENOUGH_RESOURCES) -> GangVerdict:
    fit_errors = next((t.fit_error for t in gang.tasks if t.fit_error is not None), "")
    # A gang whose pods do not exist yet (a Volcano Job before Inqueue) has no condition in
    # Volcano; its only explanation is the enqueue event, so that becomes the message.
    message = unschedulable_message(gang) if gang.tasks else gang.enqueue_detail
    return GangVerdict(
        gang_uid=gang.uid,
        namespace=gang.info.namespace,
        name=gang.info.name,
        reason=reason,
        message=message,
        condition_reason=condition_reason,
        fit_errors=fit_errors,
        detail=gang.enqueue_detail or gang.job_fit_error,
    )
