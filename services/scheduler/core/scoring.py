"""Node scores of the `nodeorder` and `binpack` plugins: higher is better, summed across plugins.

The placement module asks for one scorer per distinct task request; a scorer maps a node's
current idle vector to a number, so a node's score can be recomputed in a few operations each
time the node changes. Parts that depend only on the task spec and the node (preferred node
affinity, PreferNoSchedule taints) are computed once per spec as a static bonus, normalised
across the candidate nodes as kube-scheduler does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from services.scheduler.core.config import SchedulerConf
from services.scheduler.core.predicates import preferred_affinity_weight, untolerated_soft_taints
from services.scheduler.core.snapshot import NodeInfo, TaskInfo
from services.scheduler.core.vectors import ResourceSpace, Sparse

MAX_SCORE = 100.0
Scorer = Callable[[Sequence[int], Sequence[int]], float]  # (idle, allocatable) -> score


@dataclass(frozen=True, slots=True)
class ScoreWeights:
    least_requested: float = 0.0
    most_requested: float = 0.0
    balanced: float = 0.0
    node_affinity: float = 0.0
    taint_toleration: float = 0.0
    binpack: float = 0.0
    binpack_resources: dict[str, float] = field(default_factory=dict)

    @property
    def dynamic(self) -> bool:
        return any((self.least_requested, self.most_requested, self.balanced, self.binpack))

    @property
    def static(self) -> bool:
        return bool(self.node_affinity or self.taint_toleration)


def weights_from_conf(conf: SchedulerConf) -> ScoreWeights:
    nodeorder = conf.enabled("nodeorder", "enableNodeOrder")
    binpack = conf.enabled("binpack", "enableNodeOrder")
    resources: dict[str, float] = {}
    if binpack:
        resources = {
            "cpu": conf.argument("binpack", "binpack.cpu", 1),
            "memory": conf.argument("binpack", "binpack.memory", 1),
        }
        option = conf.plugin("binpack")
        extra = str(option.arguments.get("binpack.resources", "")) if option else ""
        for name in filter(None, (n.strip() for n in extra.split(","))):
            resources[name] = conf.argument("binpack", f"binpack.resources.{name}", 1)

    def weight(key: str, default: float) -> float:
        return conf.argument("nodeorder", key, default) if nodeorder else 0.0

    return ScoreWeights(
        least_requested=weight("leastrequested.weight", 1),
        most_requested=weight("mostrequested.weight", 0),
        balanced=weight("balancedresource.weight", 1),
        node_affinity=weight("nodeaffinity.weight", 2),
        taint_toleration=weight("tainttoleration.weight", 3),
        binpack=conf.argument("binpack", "binpack.weight", 1) if binpack else 0.0,
        binpack_resources=resources,
    )


def make_scorer(weights: ScoreWeights, space: ResourceSpace, request: Sparse) -> Scorer | None:
    """A scorer for one request, or None when no scoring plugin is on (first fit in name order)."""
    if not weights.dynamic:
        return None
    cpu, memory = space.index["cpu"], space.index["memory"]
    wanted = dict(request)
    req_cpu, req_mem = wanted.get(cpu, 0), wanted.get(memory, 0)
    kube_weight = weights.least_requested + weights.most_requested + weights.balanced
    packed = [
        (space.index[name], w, wanted.get(space.index[name], 0))
        for name, w in weights.binpack_resources.items()
        if name in space.index and wanted.get(space.index[name], 0) > 0 and w > 0
    ]
    packed_total = sum(w for _, w, _ in packed)

    least, most, balanced = weights.least_requested, weights.most_requested, weights.balanced

    def score(idle: Sequence[int], allocatable: Sequence[int]) -> float:
        # Written out rather than through helpers: this runs several times per placement.
        total = 0.0
        if kube_weight:
            capacity = allocatable[cpu]
            f_cpu = (capacity - idle[cpu] + req_cpu) / capacity if capacity > 0 else 1.0
            f_cpu = 1.0 if f_cpu > 1.0 else f_cpu
            capacity = allocatable[memory]
            f_mem = (capacity - idle[memory] + req_mem) / capacity if capacity > 0 else 1.0
            f_mem = 1.0 if f_mem > 1.0 else f_mem
            total = (
                least * (2.0 - f_cpu - f_mem) * 50.0
                + most * (f_cpu + f_mem) * 50.0
                + balanced * (1.0 - abs(f_cpu - f_mem) / 2.0) * MAX_SCORE
            )
        if packed_total:
            packing = 0.0
            for index, w, amount in packed:
                capacity = allocatable[index]
                used = capacity - idle[index] + amount
                if capacity <= 0 or used > capacity:
                    return total  # Volcano's binpack gives 0 to a node the request overflows
                packing += w * used / capacity
            total += packing / packed_total * MAX_SCORE * weights.binpack
        return total

    return score


def static_bonus(
    weights: ScoreWeights, task: TaskInfo, nodes: Sequence[NodeInfo], candidates: Sequence[int]
) -> dict[int, float]:
    """Preferred node affinity and PreferNoSchedule taints, normalised to 0..100 over candidates."""
    if not weights.static or not candidates:
        return {}
    bonus = dict.fromkeys(candidates, 0.0)
    if weights.node_affinity:
        matched = {n: preferred_affinity_weight(task, nodes[n])[0] for n in candidates}
        best = max(matched.values())
        if best > 0:
            for n, value in matched.items():
                bonus[n] += weights.node_affinity * value * MAX_SCORE / best
    if weights.taint_toleration:
        counts = {n: untolerated_soft_taints(task, nodes[n]) for n in candidates}
        worst = max(counts.values())
        for n, count in counts.items():
            share = 1.0 - count / worst if worst else 1.0
            bonus[n] += weights.taint_toleration * share * MAX_SCORE
    return bonus
