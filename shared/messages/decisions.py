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


class Bind(PodRef):
    node: str


class Eviction(PodRef):
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
    """Every pod in `binds` is to be bound to its node; together they reach the gang's minimum."""

    binds: tuple[Bind, ...]


@event_type("phalanx.decisions.pods.evicted.v1")
class PodsEvicted(_GangDecision):
    """Pods of this gang are to be evicted, for `preemptor` (a gang uid) or to release the gang."""

    evictions: tuple[Eviction, ...]
    preemptor: str | None = None


@event_type("phalanx.decisions.gang.unschedulable.v1")
class GangUnschedulable(_GangDecision):
    """The cycle could not place the gang: Volcano's condition reason and message, and ours."""

    reason: str
    condition_reason: str
    message: str
