"""The fairshare plugin: each queue's usage over time, decayed with a half-life (issue #21).

Volcano's proportion and drf share by what a queue holds right now. With `fairshare` in
volcano-scheduler.conf (argument `halfLife`, default 24h) the cycle also weighs what each queue
has *used*: per resource, the integral of its share of the cluster over time, older use counting
less, halving every half-life. `build_context` advances the usage carried by the snapshot to the
cycle's `now` (`advance`, pure), ranks the queues by it (`fair_keys`) and `plan_cycle` hands the
advanced usage back in the plan, which the scheduler leader persists (`queue_usage` table) and
reads again into the next snapshot, so a restart or a failover loses nothing.

Ranking follows Slurm's fair tree: the queue hierarchy (hdrf's annotations, else the Volcano
`parent` chain) is walked from the root; at each level siblings are compared with each other by
their usage among the siblings over their weight among the siblings, and the first level that
differs decides. A queue's usage is its dominant resource; an inner node's is the dominant
resource of its leaves' usage summed per resource.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timedelta

from services.scheduler.core.config import SchedulerConf, parse_duration
from services.scheduler.core.hdrf import queue_path
from services.scheduler.core.snapshot import QueueUsage
from services.scheduler.core.state import CycleState, QueueView
from shared.volcano.keys import HIERARCHY

PLUGIN = "fairshare"
DEFAULT_HALF_LIFE = timedelta(hours=24)
PerResource = Mapping[str, float]


def half_life(conf: SchedulerConf) -> timedelta:
    option = conf.plugin(PLUGIN)
    raw = option.arguments.get("halfLife") if option is not None else None
    if raw is None:
        return DEFAULT_HALF_LIFE
    # The configuration loader has rejected anything that is not a positive duration.
    return parse_duration(raw) or DEFAULT_HALF_LIFE


def decay(previous: float, elapsed: float, half_life_seconds: float, share: float) -> float:
    """Usage after `elapsed` seconds during which the queue held `share` of the cluster.

    Exact integral of share * 2^(-age / half-life): the old usage halves every half-life and the
    new use is added with its own decay, so splitting an interval in two gives the same result.
    A queue that holds `share` forever tends to share * half-life / ln 2."""
    if elapsed <= 0:
        return previous
    factor = math.pow(2.0, -elapsed / half_life_seconds)
    return previous * factor + share * half_life_seconds / math.log(2) * (1.0 - factor)


def current_shares(state: CycleState, total: list[int]) -> dict[str, dict[str, float]]:
    """Each queue's share of the cluster now, per resource (the pod count left out)."""
    shares: dict[str, dict[str, float]] = {}
    for queue in state.queues.values():
        own: dict[str, float] = {}
        for i in range(state.space.size - 1):
            if total[i] > 0 and queue.alloc[i] > 0:
                own[state.space.names[i]] = queue.alloc[i] / total[i]
        shares[queue.name] = own
    return shares


def advance(
    previous: QueueUsage | None, now: datetime, half_life_seconds: float, shares: Mapping[str, PerResource]
) -> QueueUsage:
    """The usage at `now`, the queues having held `shares` since `previous.at`."""
    if previous is None:
        return QueueUsage(at=now, usage={q: {} for q in shares})
    elapsed = (now - previous.at).total_seconds()
    if elapsed < 0:  # a clock that went back: keep what is known, restart from now
        return QueueUsage(at=now, usage=previous.usage)
    usage: dict[str, dict[str, float]] = {}
    for queue in set(previous.usage) | set(shares):
        before = previous.usage.get(queue, {})
        held = shares.get(queue, {})
        values = {
            name: decay(before.get(name, 0.0), elapsed, half_life_seconds, held.get(name, 0.0))
            for name in set(before) | set(held)
        }
        usage[queue] = {name: value for name, value in values.items() if value > 1e-9}
    return QueueUsage(at=now, usage=usage)


def tree_path(queue: QueueView) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """Names and weights from root down to the queue: hdrf's annotations, else the parent chain."""
    if queue.info.annotations.get(HIERARCHY, "").strip():
        return queue_path(queue)
    chain = [*reversed(queue.ancestors), queue]
    names = tuple(level.name for level in chain)
    weights = tuple(float(max(level.info.weight, 1)) for level in chain)
    if names[0] != "root":
        names, weights = ("root", *names), (1.0, *weights)
    return names, weights


def fair_keys(
    queues: Mapping[str, QueueView], usage: Mapping[str, PerResource]
) -> dict[str, tuple[float, ...]]:
    """Each queue's fair-tree key: per level from the root, usage among its siblings over weight
    among its siblings. Lower comes first; the first level that differs decides."""
    paths = {name: tree_path(queue) for name, queue in queues.items()}
    parents = {names[:-1] for names, _ in paths.values()}
    node_usage: dict[tuple[str, ...], dict[str, float]] = {}
    node_weight: dict[tuple[str, ...], float] = {}
    for name, (names, weights) in paths.items():
        for depth in range(1, len(names) + 1):
            node_weight.setdefault(names[:depth], weights[depth - 1])
        if names in parents:
            continue  # a parent queue's own usage is its children's: count the leaves only
        for depth in range(1, len(names) + 1):
            total = node_usage.setdefault(names[:depth], {})
            for resource, value in usage.get(name, {}).items():
                total[resource] = total.get(resource, 0.0) + value
    dominant = {node: max(values.values(), default=0.0) for node, values in node_usage.items()}
    siblings: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for node in node_weight:
        if len(node) > 1:
            siblings.setdefault(node[:-1], []).append(node)
    keys: dict[str, tuple[float, ...]] = {}
    for name, (names, _) in paths.items():
        key = []
        for depth in range(2, len(names) + 1):
            node = names[:depth]
            group = siblings[node[:-1]]
            used = sum(dominant.get(n, 0.0) for n in group)
            weight = sum(node_weight[n] for n in group)
            usage_part = dominant.get(node, 0.0) / used if used > 0 else 0.0
            key.append(usage_part / (node_weight[node] / weight))
        keys[name] = tuple(key)
    return keys


def give_back_key(keys: Mapping[str, tuple[float, ...]], queue: QueueView | None) -> tuple[float, ...]:
    """Reclaim's victim order: the queue furthest over its fair share over time gives back first."""
    if queue is None:
        return ()
    return tuple(-part for part in keys.get(queue.name, ()))
