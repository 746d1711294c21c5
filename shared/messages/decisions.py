"""Decisions the scheduler publishes and the controller carries out (scheduler → controller).

Each is about one gang (PodGroup) and one cycle; the scheduler writes it to PostgreSQL and publishes
it through its outbox in the same transaction. `epoch` is the scheduler leader's fencing token: the
controller carries out a decision only while its epoch is the leading scheduler's and, by the
database's clock, before `valid_until`, after which the scheduler may stop counting it
(services/controller/leader_check.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from shared.messages.envelope import EventData, event_type


class PodRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    uid: str
    namespace: str
    name: str


class AllocatedDevice(BaseModel):
    """One device for one request of a pod's ResourceClaim (in the pod's namespace), as the
    claim's status.allocation.devices.results[] names it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    claim: str
    request: str
    driver: str
    pool: str
    device: str


class PodBinding(PodRef):
    """One pod of a placed gang and its node, as the decision carries it (the scheduler core's
    own is `plan.Bind`)."""

    node: str
    # DRA: the controller writes these allocations to the pod's claims before it binds the pod.
    devices: tuple[AllocatedDevice, ...] = ()


class PodEviction(PodRef):
    """One pod to evict and why, as the decision carries it (the core's own is `plan.Eviction`)."""

    node: str
    reason: Literal["preempt", "reclaim", "release"]


class _GangDecision(EventData):
    epoch: int
    cycle: int
    gang_uid: str
    namespace: str
    podgroup: str
    # By the database's clock; None from a scheduler older than this field (rolling upgrade).
    valid_until: datetime | None = None


@event_type("phalanx.decisions.gang.enqueued.v1")
class GangEnqueued(_GangDecision):
    """The PodGroup moves Pending → Inqueue: its queue can admit it, so its pods may be created."""


@event_type("phalanx.decisions.gang.placed.v1")
class GangPlaced(_GangDecision):
    """Every pod in `binds` is to be bound to its node; together they reach the gang's minimum.
    `hypernode` names the HyperNode a network-topology constraint placed the gang in ("" if none);
    the controller records it on the PodGroup as volcano.sh/job-allocated-hypernode."""

    binds: tuple[PodBinding, ...]
    hypernode: str = ""


@event_type("phalanx.decisions.pods.evicted.v1")
class PodsEvicted(_GangDecision):
    """Pods of this gang are to be evicted, for `preemptor` (a gang uid) or to release the gang."""

    evictions: tuple[PodEviction, ...]
    preemptor: str | None = None


# The PodGroup annotation the controller writes a gang's predicted start to (reservation backfill).


@event_type("phalanx.decisions.gang.unschedulable.v1")
class GangUnschedulable(_GangDecision):
    """The cycle could not place the gang: Volcano's condition reason and message, and ours."""

    reason: str
    condition_reason: str
    message: str
    # Reservation backfill's expected start (ISO 8601 UTC), "" when none; the controller carries
    # it to the PodGroup's phalanx.io/predicted-start annotation.
    predicted_start: str = ""
