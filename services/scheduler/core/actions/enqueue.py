"""The enqueue action: admit Pending gangs (PodGroup phase Pending -> Inqueue).

Runs first in a cycle. Queues take turns in queue order, each offering its best Pending gang in
job order; a gang is admitted when its queue is Open and the queue (capability, proportion or
capacity) and the cluster (overcommit) can hold its minResources. Admitted minimums count
against later gangs in the same cycle. A rejected gang keeps Volcano's event text as its detail.
A plain pod's own PodGroup waits until its pod joins it (`Snapshot.unjoined`): admitted in the
same cycle as it is placed, it costs one decision instead of two (core/cycle_records.py).
"""

from __future__ import annotations

import heapq
from datetime import timedelta

from services.scheduler.core.context import CycleContext
from services.scheduler.core.fairness import CLUSTER_OVERUSED, admit, enqueue_blocker
from services.scheduler.core.gates import SCHEDULING_GATED
from services.scheduler.core.ordering import job_key, queue_key, sla_waiting
from services.scheduler.core.state import GangView
from shared.volcano.queue_access import QUEUE_FORBIDS_NAMESPACE


def enqueue(ctx: CycleContext) -> None:
    state, conf = ctx.state, ctx.conf
    per_queue: dict[str, list[tuple[tuple[object, ...], int]]] = {}
    for index, gang in enumerate(state.gangs):
        if gang.uid in ctx.unjoined:
            continue  # its plain pod joins next: admitted and placed then, in one decision
        if gang.phase in ("Pending", "") and not gang.released:
            if gang.queue is None:
                gang.enqueue_reason = "QueueNotFound"
                gang.enqueue_detail = f"queue {gang.info.queue} not found"
                continue
            reason, detail = ctx.invalid.get(gang.uid, ("", ""))
            if reason in (QUEUE_FORBIDS_NAMESPACE, SCHEDULING_GATED):
                gang.enqueue_reason, gang.enqueue_detail = reason, detail
                continue
            per_queue.setdefault(gang.queue.name, []).append((job_key(gang, state, conf, ctx.total), index))
    queues = []
    for name, jobs in per_queue.items():
        heapq.heapify(jobs)
        queues.append((queue_key(state.queues[name], conf, state), name))
    heapq.heapify(queues)
    while queues:
        _, name = heapq.heappop(queues)
        jobs = per_queue[name]
        _, index = heapq.heappop(jobs)
        _try_admit(ctx, state.gangs[index])
        if jobs:
            heapq.heappush(queues, (queue_key(state.queues[name], conf, state), name))


def _try_admit(ctx: CycleContext, gang: GangView) -> None:
    blocker = enqueue_blocker(gang, ctx.state, ctx.conf, ctx.cluster)
    if blocker is not None and blocker.reason == CLUSTER_OVERUSED and _sla_expired(ctx, gang):
        blocker = None  # sla: a gang that waited past its SLA is let in despite overcommit
    if blocker is not None:
        gang.enqueue_reason, gang.enqueue_detail = blocker.reason, blocker.detail
        return
    gang.phase = "Inqueue"
    gang.enqueue_reason, gang.enqueue_detail = None, ""
    ctx.enqueued.append(gang.uid)
    admit(gang, ctx.state, ctx.cluster)


def _sla_expired(ctx: CycleContext, gang: GangView) -> bool:
    waiting = sla_waiting(gang, ctx.conf)
    return waiting is not None and ctx.now - gang.info.created >= max(waiting, timedelta(0))
