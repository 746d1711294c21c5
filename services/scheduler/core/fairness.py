"""Queue-level rules: proportion's deserved shares, capacity's hierarchy, overcommit, and the
capability check that Phalanx applies at every placement.

`plan_cycle` calls `compute_deserved` once after building the state; the actions then ask
`queue_blocker` before placing a task (allocate, backfill, preempt, reclaim) and
`enqueue_blocker` before admitting a gang. Each returns None or a structured reason with a
Volcano-worded detail, so the reason ends up in the gang's verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from services.scheduler.core.config import SchedulerConf
from services.scheduler.core.state import CycleState, GangView, QueueView
from services.scheduler.core.vectors import UNLIMITED, Sparse, dominant_share, over_limit

QUEUE_CLOSED = "QueueClosed"
QUEUE_CAPABILITY = "QueueCapabilityExceeded"
QUEUE_OVERUSED = "QueueOverused"
CLUSTER_OVERUSED = "ClusterOverused"


@dataclass(frozen=True, slots=True)
class Blocker:
    reason: str
    detail: str


def fair_dims(state: CycleState) -> range:
    """Dimensions fairness is measured in: every resource but the pod count (Volcano's Resource)."""
    return range(state.space.size - 1)


def cluster_total(state: CycleState) -> list[int]:
    # Summed once per node base (state.NodeBase), not on each of the several calls a cycle.
    return list(state.total)


def compute_deserved(
    state: CycleState, conf: SchedulerConf, weights: Mapping[str, float] | None = None
) -> None:
    """Fill each queue's deserved share and real capability, per proportion or capacity.
    `weights`: proportion's weight per queue when fairshare shapes it (core/fairshare_deserved.py);
    None for each queue's configured weight, Volcano's instantaneous shares."""
    total = cluster_total(state)
    dims = fair_dims(state)
    total_guarantee = [0] * state.space.size
    for queue in state.queues.values():
        for i in dims:
            total_guarantee[i] += queue.guarantee[i]
    for queue in state.queues.values():
        queue.real_capability = [
            min(queue.capability[i], total[i] - total_guarantee[i] + queue.guarantee[i])
            if i in dims
            else UNLIMITED
            for i in range(state.space.size)
        ]
    if conf.enabled("proportion"):
        _water_fill(state, total, dims, weights or {})
    elif conf.enabled("capacity"):
        for queue in state.queues.values():
            explicit = queue.info.deserved
            queue.deserved = state.space.dense(explicit, UNLIMITED) if explicit is not None else None


def _water_fill(state: CycleState, total: list[int], dims: range, weights: Mapping[str, float]) -> None:
    """Volcano proportion: share `total` by weight, capped by real capability and request."""
    active = sorted((q for q in state.queues.values() if q.has_gangs), key=lambda q: q.name)
    weight = {q.name: weights.get(q.name, float(q.info.weight)) for q in active}
    for queue in active:
        queue.deserved = [0] * state.space.size
    remaining = [float(total[i]) for i in range(state.space.size)]
    met: set[str] = set()
    while True:
        weight_sum = sum(weight[q.name] for q in active if q.name not in met)
        if weight_sum == 0:
            break
        increased = [0.0] * state.space.size
        decreased = [0.0] * state.space.size
        for queue in active:
            if queue.name in met:
                continue
            assert queue.deserved is not None
            assert queue.real_capability is not None
            old = list(queue.deserved)
            new = [float(v) for v in old]
            for i in dims:
                value = old[i] + remaining[i] * weight[queue.name] / weight_sum
                value = min(value, queue.real_capability[i], queue.request[i])
                new[i] = max(value, queue.guarantee[i])
            queue.deserved = [int(v) for v in new]
            if all(queue.request[i] <= queue.deserved[i] for i in dims) or queue.deserved == old:
                met.add(queue.name)
            for i in dims:
                delta = queue.deserved[i] - old[i]
                if delta > 0:
                    increased[i] += delta
                else:
                    decreased[i] -= delta
        before = list(remaining)
        for i in dims:
            remaining[i] = remaining[i] + decreased[i] - increased[i]
        if all(remaining[i] <= 0 for i in dims) or remaining == before:
            break
    for queue in active:
        assert queue.deserved is not None
        queue.deserved[-1] = UNLIMITED  # pods are not part of a fair share


@dataclass(frozen=True, slots=True)
class QueueRules:
    """Which queue checks the configuration turns on, looked up once per cycle (a hot path)."""

    proportion: bool
    capacity: bool

    @classmethod
    def of(cls, conf: SchedulerConf) -> QueueRules:
        return cls(
            proportion=conf.enabled("proportion", "enabledAllocatable"),
            capacity=conf.enabled("capacity", "enabledAllocatable"),
        )


def queue_blocker(queue: QueueView | None, request: Sparse, rules: QueueRules) -> Blocker | None:
    """Why `queue` may not take one more task of `request` now (Allocatable), or None."""
    if queue is None:
        return Blocker("QueueNotFound", "queue not found")
    if queue.info.state != "Open":
        return Blocker(QUEUE_CLOSED, f"queue {queue.name} is {queue.info.state}")
    for level in (queue, *queue.ancestors):
        short = over_limit(level.alloc, request, level.capability)
        if short is not None:
            return Blocker(QUEUE_CAPABILITY, f"queue {level.name} capability exceeded")
    deserved = queue.deserved if rules.proportion else None
    if deserved is not None and over_limit(queue.alloc, request, deserved) is not None:
        return Blocker(QUEUE_OVERUSED, f"queue {queue.name} would exceed its deserved share")
    if rules.capacity:
        for level in (queue, *queue.ancestors):
            assert level.real_capability is not None
            if over_limit(level.alloc, request, level.real_capability) is not None:
                return Blocker(QUEUE_CAPABILITY, f"queue {level.name} capability exceeded")
    return None


def overused(queue: QueueView, conf: SchedulerConf, dims: range) -> bool:
    """Proportion's Overused: deserved <= allocated in every dimension (allocate skips it)."""
    if not conf.enabled("proportion", "enabledOverused") or queue.deserved is None:
        return False
    return all(queue.deserved[i] <= queue.alloc[i] for i in dims)


def enqueue_blocker(
    gang: GangView, state: CycleState, conf: SchedulerConf, cluster: ClusterUsage
) -> Blocker | None:
    """Why `gang` may not move Pending -> Inqueue now (JobEnqueueable), or None."""
    queue = gang.queue
    if queue is None:
        return Blocker("QueueNotFound", f"queue {gang.info.queue} not found")
    if queue.info.state != "Open":
        return Blocker(QUEUE_CLOSED, f"queue {queue.name} is {queue.info.state}")
    if gang.info.min_resources is None:
        return None
    minimum = _unheld_minimum(gang, state)
    dims = fair_dims(state)
    wanted = [i for i in dims if minimum[i] > 0]
    # Phalanx checks capability on the queue and its ancestors whatever the plugins say.
    for level in (queue, *queue.ancestors):
        short = [
            state.space.names[i]
            for i in wanted
            if minimum[i] + level.alloc[i] + level.inqueue[i] - level.elastic[i] > level.capability[i]
        ]
        if short:
            return Blocker(
                QUEUE_CAPABILITY, _names("queue resource quota insufficient", "insufficient", short)
            )
    if conf.enabled("proportion", "enableJobEnqueued") or conf.enabled("capacity", "enableJobEnqueued"):
        assert queue.real_capability is not None
        short = [
            state.space.names[i]
            for i in wanted
            if minimum[i] + queue.alloc[i] + queue.inqueue[i] - queue.elastic[i] > queue.real_capability[i]
        ]
        if short:
            return Blocker(
                QUEUE_CAPABILITY, _names("queue resource quota insufficient", "insufficient", short)
            )
    if conf.enabled("overcommit", "enableJobEnqueued"):
        short = [
            state.space.names[i]
            for i in wanted
            if cluster.inqueue[i] + minimum[i] > cluster.total[i] * cluster.factor - cluster.used[i]
        ]
        if short:
            return Blocker(CLUSTER_OVERUSED, _names("resource in cluster is overused", "overused", short))
    return None


@dataclass(slots=True)
class ClusterUsage:
    """Overcommit's view of the cluster: total, used, and minimums already admitted."""

    total: list[int]
    used: list[int]
    inqueue: list[int]
    factor: float


def cluster_usage(state: CycleState, conf: SchedulerConf) -> ClusterUsage:
    factor = conf.argument("overcommit", "overcommit-factor", 1.2)
    factor = 1.2 if factor < 1 else factor
    total = cluster_total(state)
    idle = [sum(column) for column in zip(*state.idle, strict=True)] if state.idle else [0] * len(total)
    used = [t - free for t, free in zip(total, idle, strict=True)]
    inqueue = list(state.settled_inqueue)
    for gang in state.gangs:
        if gang.phase in ("Inqueue", "Running") and gang.info.min_resources is not None:
            minimum = state.space.dense(gang.info.min_resources)
            for i, amount in enumerate(minimum):
                inqueue[i] += max(0, amount - gang.alloc[i])
    return ClusterUsage(total, used, inqueue, factor)


def _unheld_minimum(gang: GangView, state: CycleState) -> list[int]:
    """The part of the gang's minResources it does not hold yet. A gang back in Pending after it
    lost members still holds the rest: counting that twice would keep it out for good."""
    minimum = state.space.dense(gang.info.min_resources)
    return [max(0, amount - held) for amount, held in zip(minimum, gang.alloc, strict=True)]


def admit(gang: GangView, state: CycleState, cluster: ClusterUsage) -> None:
    """Record an admitted gang's minimum against its queue (and ancestors) and the cluster."""
    if gang.info.min_resources is None or gang.queue is None:
        return
    minimum = _unheld_minimum(gang, state)
    for level in (gang.queue, *gang.queue.ancestors):
        for i, amount in enumerate(minimum):
            level.inqueue[i] += amount
    for i, amount in enumerate(minimum):
        cluster.inqueue[i] += amount


def queue_share(queue: QueueView, dims: range) -> float:
    if queue.deserved is None:
        return 0.0
    return dominant_share(queue.alloc, queue.deserved, dims)


def _names(prefix: str, verb: str, names: Sequence[str]) -> str:
    return f"{prefix}: " + ", ".join(f"{verb} {name}" for name in names)
