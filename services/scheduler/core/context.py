"""What every action of one cycle shares: the working state, the configuration, the node finder
and the decisions gathered so far.

`plan_cycle` builds one `CycleContext`, runs the configured actions over it in order, and turns
what they left in it into the `CyclePlan`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from services.scheduler.core.config import SchedulerConf
from services.scheduler.core.disruption import DisruptionGuard
from services.scheduler.core.fairness import ClusterUsage, QueueRules
from services.scheduler.core.network_topology import NetworkTopology
from services.scheduler.core.placement import Placer
from services.scheduler.core.plan import Eviction
from services.scheduler.core.preemption_cost import PreemptionRun
from services.scheduler.core.state import CycleState, GangView

if TYPE_CHECKING:
    from services.scheduler.core.reservation import ReservationBook


@dataclass(slots=True)
class CycleContext:
    state: CycleState
    conf: SchedulerConf
    placer: Placer
    total: list[int]
    cluster: ClusterUsage
    rules: QueueRules
    now: datetime
    disruption: DisruptionGuard
    enqueued: list[str] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    invalid: dict[str, tuple[str, str]] = field(default_factory=dict)  # uid -> (reason, message)
    unjoined: frozenset[str] = frozenset()  # gangs whose own plain pod has not joined (Snapshot)
    topology: NetworkTopology | None = None  # HyperNodes and their usage, when there are any
    reservations: ReservationBook | None = None  # reservation backfill, when configured
    preemption: PreemptionRun | None = None  # preemptioncost, when configured

    def schedulable(self, gang: GangView) -> bool:
        """Gangs the placing actions consider: admitted, not released, valid, queue known."""
        return (
            gang.phase not in ("Pending", "")
            and not gang.released
            and gang.uid not in self.invalid
            and gang.queue is not None
        )
