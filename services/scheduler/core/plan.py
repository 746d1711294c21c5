"""The scheduler core's output: the decisions of one cycle, as plain frozen data.

`plan_cycle` returns a `CyclePlan`; the shell writes it to PostgreSQL in one fenced transaction
and publishes it: one row batch and one message per `GangBinds`, one eviction request per
`Eviction` (the controller carries it out), nominations kept for the next snapshot, and a
`GangVerdict` per gang left unplaced, which answers "why is my job pending".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from services.scheduler.core.devices import DeviceResult
from services.scheduler.core.node_base import NodeBase
from services.scheduler.core.snapshot import QueueUsage
from shared.domain.resources import Resources

# Eviction reasons, as Volcano's "Pod is evicted, because of <reason>".
PREEMPT = "preempt"
RECLAIM = "reclaim"
GANG_RELEASE = "gang-release"


@dataclass(frozen=True, slots=True)
class Bind:
    task_uid: str
    namespace: str
    name: str
    node: str
    # The DRA devices allocated for the pod's claims: written to the claims before the bind.
    devices: tuple[DeviceResult, ...] = ()


@dataclass(frozen=True, slots=True)
class GangBinds:
    """All binds of one gang decided in this cycle: the gang is placed whole or not at all."""

    gang_uid: str
    binds: tuple[Bind, ...]
    hypernode: str = ""  # the HyperNode a network-topology constraint placed the gang in


@dataclass(frozen=True, slots=True)
class VictimCost:
    """One victim gang of a cost-counted preemption and what evicting it costs (preemption_cost.py)."""

    gang_uid: str
    job: str  # namespace/name
    cost: float
    detail: str  # the cost's parts in words


@dataclass(frozen=True, slots=True)
class PreemptionNote:
    """Why preemptioncost evicted what it did for one task of gang `gang_uid`: the victims, their
    cost, and the cheapest other nodes' victim sets (node, victims, total cost) it passed over."""

    gang_uid: str
    namespace: str
    name: str
    node: str
    victims: tuple[VictimCost, ...]
    cost: float
    alternatives: tuple[tuple[str, tuple[VictimCost, ...], float], ...]
    message: str


@dataclass(frozen=True, slots=True)
class Eviction:
    task_uid: str
    namespace: str
    name: str
    node: str
    reason: str  # "preempt" | "reclaim" | "gang-release"
    preemptor_gang_uid: str | None = None


@dataclass(frozen=True, slots=True)
class Nomination:
    """A pending task waiting on `node` for room that evictions free (status.nominatedNodeName).

    The shell stores it as the task's `nominated_node` for the next snapshot; that room is then
    reserved for the task, so no other gang takes it and no new evictions are made for it.
    """

    task_uid: str
    gang_uid: str
    node: str


@dataclass(frozen=True, slots=True)
class GangVerdict:
    """Why a gang was not placed: a structured reason plus Volcano's condition and message."""

    gang_uid: str
    namespace: str
    name: str
    reason: str  # e.g. NotEnoughResources, QueueCapabilityExceeded, QueueClosed, NodeSelectorMismatch
    message: str  # the PodGroup Unschedulable condition message, worded as Volcano's
    condition_reason: str = "NotEnoughResources"  # or NotEnoughTasks / NotEnoughPodsOfTask
    fit_errors: str = ""  # e.g. "0/2 nodes are unavailable: 2 Insufficient cpu."
    detail: str = ""  # e.g. the enqueue event "queue resource quota insufficient: insufficient cpu"
    predicted_start: str = ""  # reservation backfill's expected start, ISO 8601 UTC ("" = none)


@dataclass(frozen=True, slots=True)
class QueueFigures:
    """One queue at the end of the cycle, for Volcano's queue metrics (milli-units, as Resources)."""

    name: str
    weight: int
    allocated: Resources
    request: Resources
    deserved: Resources | None  # None when neither proportion nor capacity gives one
    capability: Resources | None  # None when the queue names no capability
    share: float  # proportion's dominant share: allocated / deserved
    overused: bool


@dataclass(frozen=True, slots=True)
class CyclePlan:
    enqueued: tuple[str, ...] = ()  # gang uids moved Pending -> Inqueue
    binds: tuple[GangBinds, ...] = ()
    evictions: tuple[Eviction, ...] = ()
    verdicts: tuple[GangVerdict, ...] = ()
    released: tuple[str, ...] = ()  # gangs released by the optional below-minimum rule
    nominations: tuple[Nomination, ...] = ()
    underfilled: tuple[str, ...] = ()  # gangs holding resources with fewer members than minimum
    queues: tuple[QueueFigures, ...] = ()  # every queue's figures after the cycle, for metrics
    predictions: tuple[StartPrediction, ...] = ()  # reservation backfill only (core/reservation.py)
    queue_usage: QueueUsage | None = None  # fairshare only: the usage to persist (core/fairshare.py)
    preemptions: tuple[PreemptionNote, ...] = ()  # preemptioncost only: why each eviction
    # The cycle's per-node starting vectors, for the next cycle to reuse (state.NodeBase); not
    # a decision, so two plans that decide the same are equal whatever it holds.
    node_base: NodeBase | None = field(default=None, compare=False, repr=False)

    def verdict_for(self, gang_uid: str) -> GangVerdict | None:
        return next((v for v in self.verdicts if v.gang_uid == gang_uid), None)

    def verdict_by_job(self, namespace: str, name: str) -> GangVerdict | None:
        return next((v for v in self.verdicts if (v.namespace, v.name) == (namespace, name)), None)

    @property
    def placements(self) -> int:
        return sum(len(gang.binds) for gang in self.binds)


@dataclass(frozen=True, slots=True)
class StartPrediction:
    """When a waiting gang is expected to start, from the cycle's reservation plan.

    `start` is None when no start can be foreseen (the room it needs is held by work with no
    runtime estimate); `published` is what the PodGroup should carry: the previous prediction when
    the new one differs by less than the materiality rule (core/reservation.py), so a gang that
    waits for many cycles is not re-announced every cycle."""

    gang_uid: str
    namespace: str
    name: str
    start: datetime | None
    published: datetime | None
    reserved: bool  # the gang holds a reservation: later gangs may not delay it
    estimate_seconds: float | None
    estimate_source: str
