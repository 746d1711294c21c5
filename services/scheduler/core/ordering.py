"""Orders of the cycle: which queue, which job and which task comes first.

Volcano combines JobOrder and QueueOrder callbacks plugin by plugin, tier by tier, the first
plugin with an opinion deciding; that is a lexicographic key built in configuration order,
which is what these functions return. The actions recompute a job's key each time they push the
job back, because readiness (gang) and dominant share (drf) change as tasks are placed.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from services.scheduler.core.config import SchedulerConf, parse_duration
from services.scheduler.core.fairness import fair_dims, queue_share
from services.scheduler.core.snapshot import TaskInfo
from services.scheduler.core.state import CycleState, GangView, QueueView
from services.scheduler.core.vectors import dominant_share

_INDEX = re.compile(r"-(\d+)$")
_EPOCH = datetime(1970, 1, 1)


def task_order(task: TaskInfo) -> tuple[int, int, str, str]:
    """priority plugin (higher first), then the pod-name index, then name and uid."""
    match = _INDEX.search(task.name)
    return (-task.priority, int(match.group(1)) if match else 0, task.name, task.uid)


def sla_waiting(gang: GangView, conf: SchedulerConf) -> timedelta | None:
    if not conf.enabled("sla"):
        return None
    if gang.info.sla_waiting_time is not None:
        return gang.info.sla_waiting_time
    option = conf.plugin("sla")
    raw = option.arguments.get("sla-waiting-time") if option else None
    return parse_duration(raw) if raw is not None else None


def job_key(gang: GangView, state: CycleState, conf: SchedulerConf, total: list[int]) -> tuple[object, ...]:
    key: list[object] = []
    for tier in conf.tiers:
        for option in tier.plugins:
            if not option.enabled("enableJobOrder"):
                continue
            if option.name == "priority":
                key.append(-gang.info.priority)
            elif option.name == "gang":
                key.append(1 if gang.is_ready() else 0)
            elif option.name == "drf":
                key.append(dominant_share(gang.alloc, total, fair_dims(state)))
            elif option.name == "fairshare" and gang.queue is not None:
                key.append(state.fair_keys.get(gang.queue.name, ()))
            elif option.name == "sla":
                waiting = sla_waiting(gang, conf)
                deadline = gang.info.created + waiting if waiting is not None else None
                key.append((0, seconds_of(deadline)) if deadline else (1, 0.0))
    key.extend((seconds_of(gang.info.created), gang.info.uid))
    return tuple(key)


def queue_key(queue: QueueView, conf: SchedulerConf, state: CycleState) -> tuple[object, ...]:
    """proportion/capacity (priority, then share), fairshare's usage over time and hierarchical
    drf, in configuration order."""
    key: list[object] = []
    for tier in conf.tiers:
        for option in tier.plugins:
            if not option.enabled("enableQueueOrder"):
                continue
            if option.name in ("proportion", "capacity"):
                key.extend((-queue.info.priority, queue_share(queue, fair_dims(state))))
            elif option.name == "fairshare":
                key.append(state.fair_keys.get(queue.name, ()))
            elif option.name == "drf" and option.enabled("enableHierarchy") and state.hierarchy:
                key.append(state.hierarchy.queue_key(queue))
    key.append(queue.name)
    return tuple(key)


def seconds_of(moment: datetime) -> float:
    if moment.tzinfo is not None:
        return moment.timestamp()
    return (moment - _EPOCH).total_seconds()
