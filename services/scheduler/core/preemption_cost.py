"""The preemptioncost plugin: what evicting a gang costs, and how much eviction budget is left.

Volcano's preempt and reclaim pick victims by priority alone. With `preemptioncost` in
volcano-scheduler.conf, the evict actions (actions/evict.py) instead evict whole gangs, cheapest
first, trying every candidate node and keeping the node whose victims cost least; gangs younger
than `minRunningTime` are never victims; and per-queue and cluster-wide budgets cap how many pods
may be evicted in a sliding window. Without the plugin none of this applies.

The cost of evicting a gang (docs/preemption.md):

    cost = lost hours x (GPUs held + cpuWeight x CPU cores held) + podWeight x pods evicted

where lost hours run from the gang's last checkpoint (the RFC 3339 time in its
`phalanx.io/last-checkpoint` annotation, or the annotation named by `checkpointAnnotation`) or,
without one, from the earliest start of its running pods. All of it is plain data in, plain data
out: the budgets take the recent evictions the shell read from the decisions table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from services.scheduler.core.durations import parse_duration
from services.scheduler.core.plan import PreemptionNote
from shared.volcano.keys import LAST_CHECKPOINT as CHECKPOINT_ANNOTATION

PLUGIN = "preemptioncost"
ARGUMENTS = frozenset(
    {
        "minRunningTime",
        "checkpointAnnotation",
        "cpuWeight",
        "podWeight",
        "budgetWindow",
        "queueMaxPods",
        "queueMaxShare",
        "clusterMaxPods",
    }
)
_GPU_MARK = "gpu"  # nvidia.com/gpu, nvidia.com/gpu-a100, amd.com/gpu: a GPU by name


@dataclass(frozen=True, slots=True)
class CostArgs:
    min_running: timedelta = timedelta(0)
    checkpoint_annotation: str = CHECKPOINT_ANNOTATION
    cpu_weight: float = 0.1  # ten cores lost for an hour cost as much as one GPU-hour
    pod_weight: float = 0.01  # a tie-breaker: of two equally costly sets, fewer pods
    window: timedelta = timedelta(hours=1)
    queue_max_pods: int | None = None
    queue_max_share: float | None = None  # of the pods the queue runs at the cycle's start
    cluster_max_pods: int | None = None


def args_of(arguments: Mapping[str, Any]) -> CostArgs:
    """Checked arguments; a ConfError-worthy value raises ValueError naming the argument."""

    def duration(key: str, default: timedelta) -> timedelta:
        if key not in arguments:
            return default
        parsed = parse_duration(arguments[key])
        if parsed is None:
            raise ValueError(f"argument {key!r} of plugin {PLUGIN!r} must be a duration such as 30m")
        return parsed

    def number(key: str, default: float | None, *, whole: bool = False, most: float | None = None) -> Any:
        if key not in arguments:
            return default
        raw = arguments[key]
        try:
            value = float(raw)
        except (TypeError, ValueError) as err:
            raise ValueError(f"argument {key!r} of plugin {PLUGIN!r} is not a number: {raw!r}") from err
        if value < 0 or (most is not None and value > most) or (whole and value != int(value)):
            rule = (
                "a whole number >= 0" if whole else f"a number from 0 to {most}" if most else "a number >= 0"
            )
            raise ValueError(f"argument {key!r} of plugin {PLUGIN!r} must be {rule}: {raw!r}")
        return int(value) if whole else value

    return CostArgs(
        min_running=duration("minRunningTime", timedelta(0)),
        checkpoint_annotation=str(arguments.get("checkpointAnnotation", CHECKPOINT_ANNOTATION)),
        cpu_weight=number("cpuWeight", 0.1),
        pod_weight=number("podWeight", 0.01),
        window=duration("budgetWindow", timedelta(hours=1)),
        queue_max_pods=number("queueMaxPods", None, whole=True),
        queue_max_share=number("queueMaxShare", None, most=1.0),
        cluster_max_pods=number("clusterMaxPods", None, whole=True),
    )


@dataclass(frozen=True, slots=True)
class PodHeld:
    """One running pod of a victim gang, as the cost sees it."""

    started: datetime | None
    gpus: float
    cpus: float


@dataclass(frozen=True, slots=True)
class GangCost:
    cost: float
    lost_hours: float
    gpus: float
    pods: int

    def describe(self) -> str:
        return f"cost {self.cost:.2f} ({self.lost_hours:.2f} h lost x {self.gpus:g} GPUs, {self.pods} pods)"


def held(request: Mapping[str, int], started: datetime | None) -> PodHeld:
    """A pod's GPUs and CPU cores from its request in milli-units."""
    gpus = sum(amount for name, amount in request.items() if _GPU_MARK in name.lower()) / 1000
    return PodHeld(started=started, gpus=gpus, cpus=request.get("cpu", 0) / 1000)


def running_since(
    annotations: Mapping[str, str], pods: Sequence[PodHeld], created: datetime, args: CostArgs
) -> datetime:
    """From when evicting the gang loses work: its last checkpoint, else its earliest pod start."""
    starts = [p.started for p in pods if p.started is not None]
    since = min(starts) if starts else created
    mark = annotations.get(args.checkpoint_annotation)
    if mark:
        try:
            checkpoint = datetime.fromisoformat(mark.replace("Z", "+00:00"))
        except ValueError:
            return since  # an unreadable checkpoint saves nothing: count from the start
        if checkpoint.tzinfo is not None and since.tzinfo is None:
            checkpoint = checkpoint.replace(tzinfo=None)
        since = max(since, checkpoint)
    return since


def gang_cost(
    annotations: Mapping[str, str], pods: Sequence[PodHeld], created: datetime, now: datetime, args: CostArgs
) -> GangCost:
    lost = max(0.0, (now - running_since(annotations, pods, created, args)).total_seconds() / 3600)
    gpus = sum(p.gpus for p in pods)
    cpus = sum(p.cpus for p in pods)
    cost = lost * (gpus + args.cpu_weight * cpus) + args.pod_weight * len(pods)
    return GangCost(cost=cost, lost_hours=lost, gpus=gpus, pods=len(pods))


def too_young(pods: Sequence[PodHeld], created: datetime, now: datetime, args: CostArgs) -> bool:
    """minRunningTime: a gang running for less than it (from its earliest pod start) is no victim."""
    if args.min_running <= timedelta(0):
        return False
    starts = [p.started for p in pods if p.started is not None]
    return now - (min(starts) if starts else created) < args.min_running


@dataclass(frozen=True, slots=True)
class PastEviction:
    """One pod evicted in an earlier cycle: its queue and when (a decisions row of kind evict)."""

    queue: str
    at: datetime


@dataclass(slots=True)
class BudgetLeft:
    """What may still be evicted in the window: per queue (absent: unlimited) and cluster-wide."""

    queues: dict[str, int] = field(default_factory=dict)
    cluster: int | None = None

    def allows(self, wanted: Mapping[str, int]) -> str | None:
        """None when evicting `wanted` pods per queue fits every budget, else why it does not."""
        total = sum(wanted.values())
        if self.cluster is not None and total > self.cluster:
            room = self.cluster
            return f"the cluster-wide preemption budget has {room} pod(s) left in this window, {total} needed"
        for queue, count in sorted(wanted.items()):
            left = self.queues.get(queue)
            if left is not None and count > left:
                return (
                    f"queue {queue}'s preemption budget has {left} pod(s) left in this window, {count} needed"
                )
        return None


def budget_left(
    history: Iterable[PastEviction], now: datetime, args: CostArgs, queue_pods: Mapping[str, int]
) -> BudgetLeft:
    """Each budget minus the evictions inside the window ending now. `queue_pods`: the pods each
    queue runs now, which `queueMaxShare` is a share of (the smaller of the two limits holds)."""
    since = now - args.window
    recent: dict[str, int] = {}
    for past in history:
        if since < past.at <= now:
            recent[past.queue] = recent.get(past.queue, 0) + 1
    left = BudgetLeft()
    if args.cluster_max_pods is not None:
        left.cluster = max(0, args.cluster_max_pods - sum(recent.values()))
    if args.queue_max_pods is None and args.queue_max_share is None:
        return left
    for queue in set(queue_pods) | set(recent):
        limits = []
        if args.queue_max_pods is not None:
            limits.append(args.queue_max_pods)
        if args.queue_max_share is not None:
            # Share of what the queue held before this window's evictions took from it.
            limits.append(int(args.queue_max_share * (queue_pods.get(queue, 0) + recent.get(queue, 0))))
        left.queues[queue] = max(0, min(limits) - recent.get(queue, 0))
    return left


@dataclass(slots=True)
class PreemptionRun:
    """The plugin's state for one cycle: its arguments, what is left of the budgets, the pods each
    queue has given up so far this cycle (committed trials only), and the explanations."""

    args: CostArgs
    left: BudgetLeft
    spent: dict[str, int] = field(default_factory=dict)
    notes: list[PreemptionNote] = field(default_factory=list)
    costs: dict[str, GangCost] = field(default_factory=dict)
