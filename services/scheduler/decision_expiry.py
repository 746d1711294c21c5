"""Shell: the one rule for when a pending decision stops counting as allocated.

The snapshot reader (snapshot_reader.py) overlays the pending decisions that still count, and the
cycle's fenced commit (cycle_loop.py) marks the others `expired`; both use `still_counts`, so
what a cycle left out of its snapshot is exactly what it expires.

A pending decision counts while it is younger than `decision_ttl` (past ingest's catch-up point).
A bind decision whose gang decision has *begun* counts longer: once the controller has sent the
first bind of a gang's decision it carries out every other bind of it however late
(services/controller/gangs.py), so expiring the rest would give their room to another gang and
leave this one half bound for good. Begun means a sibling bind row (same gang, epoch and cycle)
is confirmed by ingest. Such a decision counts until it is confirmed, or its pod is gone or
replaced (no live pod row of its uid), or `begun_ttl` (ten times the TTL by default) has passed.
Only the leading epoch's decisions are kept so: the controller refuses an older epoch's decision
whether begun or not, so after a takeover its unbound pods are placed again after the TTL.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, and_, exists, or_, true
from sqlalchemy.orm import aliased

from shared.storage import tables

# How many decision TTLs a begun gang decision's unconfirmed binds keep counting, by default.
BEGUN_TTL_FACTOR = 10


@dataclass(frozen=True)
class DecisionExpiry:
    """Pending decisions created before `before` stop counting, unless their gang decision (of
    the leading `epoch`) has begun; those stop counting once created before `begun_before` (or
    confirmed, or their pod gone)."""

    before: datetime
    begun_before: datetime
    epoch: int | None


def still_counts(expiry: DecisionExpiry | None) -> ColumnElement[bool]:
    """Of a pending decision row: whether it still counts (None: all do); its negation expires it."""
    decision = tables.Decision
    if expiry is None:
        return true()
    sibling = aliased(tables.Decision)
    pod = tables.Pod
    begun = exists().where(
        sibling.gang_uid == decision.gang_uid,
        sibling.epoch == decision.epoch,
        sibling.cycle == decision.cycle,
        sibling.kind == "bind",
        sibling.state == "confirmed",
    )
    pod_alive = exists().where(pod.uid == decision.pod_uid, pod.deleted.is_(False))
    result: ColumnElement[bool] = or_(
        decision.created_at > expiry.before,
        and_(
            decision.kind == "bind",
            decision.epoch == expiry.epoch,
            decision.created_at > expiry.begun_before,
            begun,
            pod_alive,
        ),
    )
    return result
