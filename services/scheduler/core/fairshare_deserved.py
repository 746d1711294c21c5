"""fairshare's entitlement: usage over time shapes proportion's deserved share (issue #21).

Ordering alone (core/fairshare.py) cannot make a day's shares track the weights: what keeps a queue
to its part under contention is proportion's cap, its deserved share, and that is computed from
what the queues hold now. With `deservedByUsage: true` among fairshare's arguments,
`build_context` asks `weights` for each queue's weight as proportion's water-filling should use it
(core/fairness.py `compute_deserved`): a queue under-served over the half-life gets a larger
entitlement, one over-served a smaller one. Off by default: Volcano's instantaneous shares stay.

The multiplier follows Slurm's fair-share factor 2^(-usage/shares), taken level by level down the
fair tree (siblings compared with each other, as `fair_keys` does): at each level a node whose part
of its siblings' decayed usage is `r` times its part of their weight gets 2^(1 - r) (1 on its share,
2 having used nothing, 1/2 at twice its share), the levels multiplied, the product bounded to
[1/deservedBound, deservedBound] (default 4). Water-filling only compares the weights of queues
that still want more, so only these ratios matter; a queue whose demand is met gives what it does
not use to the others, as before. Plain data in, plain data out.
"""

from __future__ import annotations

from collections.abc import Mapping

from services.scheduler.core.config import SchedulerConf

PLUGIN = "fairshare"
SWITCH = "deservedByUsage"
BOUND = "deservedBound"
DEFAULT_BOUND = 4.0


def enabled(conf: SchedulerConf) -> bool:
    option = conf.plugin(PLUGIN)
    return option is not None and str(option.arguments.get(SWITCH, "false")).lower() in ("true", "1")


def bound(conf: SchedulerConf) -> float:
    # The configuration loader has refused a bound below 1.
    return conf.argument(PLUGIN, BOUND, DEFAULT_BOUND)


def factor(key: tuple[float, ...], limit: float) -> float:
    """The multiplier on a queue's weight from its fair-tree key (usage part over weight part per
    level from the root): 2^(1 - r) per level, multiplied, bounded to [1/limit, limit]."""
    product = 1.0
    for ratio in key:
        product *= 2.0 ** (1.0 - ratio)
    return min(limit, max(1.0 / limit, product))


def weights(
    base: Mapping[str, float], keys: Mapping[str, tuple[float, ...]], limit: float
) -> dict[str, float]:
    """Each queue's weight for proportion's water-filling: its configured weight times `factor`.
    A queue without a key (no fairshare view of it) keeps its weight."""
    return {name: weight * factor(keys.get(name, ()), limit) for name, weight in base.items()}
