"""Phalanx's scheduling core: Volcano's actions and plugins as a pure function over a snapshot.

The shell builds a `Snapshot`, parses volcano-scheduler.conf with `load_conf`/`parse_conf`, and
calls `plan_cycle(snapshot, conf)`; the `CyclePlan` it gets back holds every decision of the
cycle. Nothing in this package does I/O, reads a clock or keeps state between calls.
"""

from services.scheduler.core.config import (
    DEFAULT_CONF,
    ConfError,
    ConfLoad,
    PluginOption,
    SchedulerConf,
    Tier,
    load_conf,
    parse_conf,
)
from services.scheduler.core.cycle import plan_cycle
from services.scheduler.core.plan import (
    Bind,
    CyclePlan,
    Eviction,
    GangBinds,
    GangVerdict,
    Nomination,
)
from services.scheduler.core.snapshot import (
    DisruptionBudget,
    GangInfo,
    NodeInfo,
    OtherPod,
    QueueInfo,
    Snapshot,
    TaskInfo,
)

__all__ = [
    "DEFAULT_CONF",
    "Bind",
    "ConfError",
    "ConfLoad",
    "CyclePlan",
    "DisruptionBudget",
    "Eviction",
    "GangBinds",
    "GangInfo",
    "GangVerdict",
    "NodeInfo",
    "Nomination",
    "OtherPod",
    "PluginOption",
    "QueueInfo",
    "SchedulerConf",
    "Snapshot",
    "TaskInfo",
    "Tier",
    "load_conf",
    "parse_conf",
    "plan_cycle",
]
