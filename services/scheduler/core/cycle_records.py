"""Pure: what one cycle's plan becomes on commit — decision rows, verdict rows and the events.

Sits between `plan_cycle` (cycle.py) and the scheduling loop's fenced commit
(`services/scheduler/cycle_loop.py`): the loop fences its leadership, then hands the plan, the
snapshot it was planned on, the verdicts already recorded, its epoch and cycle to `cycle_records`,
and writes what comes back — `decisions` into `decisions`, `verdicts` upserted into
`gang_verdicts` (after deleting the verdicts of `placed_gang_uids`), and `events` into the outbox.

One message per gang, never one per pod: a gang enqueued, placed (its binds), evicted (its pods) or
found unschedulable, each with its audit event. A gang enqueued and placed in the same cycle (a
single pod, or any gang whose pods all exist when it is admitted) gets its enqueue row but only the
placement's message, whose audit event says `enqueued: true`: the controller takes a placement as
an admission too, so the enqueue message would carry nothing it needs, and the audit stream still
shows both. An unchanged verdict is neither written nor
announced again, so a gang that waits for many cycles is written once. Event ids are stable across
a retried commit (`epoch:cycle:what:gang`), so consumers can drop the duplicate.

Tracing is the caller's: `trace_step` records one step of a traced gang's job (its context is in
the gang's annotations) and returns the context to carry on its events; the shell passes one built
on `shared.tracing.step`, which keeps the pure core free of the exporter.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from services.scheduler.core.plan import Bind, CyclePlan, Eviction, GangVerdict, PreemptionNote, VictimCost
from services.scheduler.core.snapshot import GangInfo, Snapshot
from shared.messages import decisions as msg
from shared.messages import subjects
from shared.messages.audit import AuditRecorded, audit_event
from shared.messages.envelope import CloudEvent, EventData, new_event

SOURCE = "phalanx/scheduler"

# (step name, the gang's annotations, span attributes) -> the trace context to put on its events.
TraceStep = Callable[[str, Mapping[str, str], Mapping[str, Any]], str | None]
# gang uid -> (reason, message, queue) of the verdict the table holds.
RecordedVerdicts = Mapping[str, tuple[str, str, str]]


def no_tracing(_name: str, _annotations: Mapping[str, str], _attributes: Mapping[str, Any]) -> str | None:
    return None


@dataclass(frozen=True)
class CycleStamp:
    """Who commits, when: the leader's fencing epoch, its cycle, and until when (the database's
    clock) the controller may carry the decisions out (None: no deadline known)."""

    epoch: int
    cycle: int
    valid_until: datetime | None


@dataclass
class CycleRecords:
    decisions: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    placed_gang_uids: list[str] = field(default_factory=list)
    events: list[tuple[str, CloudEvent[Any]]] = field(default_factory=list)


def cycle_records(
    plan: CyclePlan,
    snapshot: Snapshot,
    recorded: RecordedVerdicts,
    stamp: CycleStamp,
    *,
    conf_news: AuditRecorded | None = None,
    trace_step: TraceStep = no_tracing,
) -> CycleRecords:
    """The rows and events that commit `plan`, planned on `snapshot`; `conf_news`: a
    configuration (re)load not yet on the audit stream, announced with this cycle."""
    writer = _Writer(snapshot, stamp, trace_step)
    placed_now = {p.gang_uid for p in plan.binds}
    for gang_uid in plan.enqueued:
        writer.enqueued(gang_uid, announce=gang_uid not in placed_now)
    enqueued_now = set(plan.enqueued)
    for placed in plan.binds:
        writer.placed(
            placed.gang_uid, placed.binds, placed.hypernode, enqueued=placed.gang_uid in enqueued_now
        )
    # Only a cycle that evicts needs every task's gang (most cycles do not, and it is every task).
    task_gang = {t.uid: g.uid for g in snapshot.gangs for t in g.tasks} if plan.evictions else {}
    for victim_uid, evictions in _evictions_by_gang(plan, task_gang).items():
        writer.evicted(victim_uid, evictions)
    for index, note in enumerate(plan.preemptions):
        writer.preempted_for(index, note)
    for verdict in plan.verdicts:
        writer.verdict(verdict, recorded)
    if conf_news is not None:
        writer.conf_news(conf_news)
    writer.records.placed_gang_uids = [p.gang_uid for p in plan.binds]
    return writer.records


class _Writer:
    """Accumulates one cycle's records; each method translates one kind of decision."""

    def __init__(self, snapshot: Snapshot, stamp: CycleStamp, trace_step: TraceStep) -> None:
        self.gangs: dict[str, GangInfo] = {g.uid: g for g in snapshot.gangs}
        self.stamp = stamp
        self.trace_step = trace_step
        self.records = CycleRecords()

    def enqueued(self, gang_uid: str, *, announce: bool) -> None:
        # The row always: the snapshot counts the gang admitted until its PodGroup says so.
        self.records.decisions.append(self._decision("enqueue", gang_uid))
        if not announce:
            return  # placed in the same cycle: the placement announces the admission too
        self._announce(
            msg.GangEnqueued(**self._base(gang_uid)),
            "enqueued",
            gang_uid,
            self._audit("enqueued", gang_uid, {}),
        )

    def placed(self, gang_uid: str, planned: tuple[Bind, ...], hypernode: str, *, enqueued: bool) -> None:
        binds = tuple(
            msg.PodBinding(
                uid=b.task_uid,
                namespace=b.namespace,
                name=b.name,
                node=b.node,
                devices=tuple(
                    msg.AllocatedDevice(
                        claim=d.claim_name, request=d.request, driver=d.driver, pool=d.pool, device=d.device
                    )
                    for d in b.devices
                ),
            )
            for b in planned
        )
        self.records.decisions.extend(
            {
                **self._decision("bind", gang_uid, b.uid, b.node),
                "devices": [d.model_dump() for d in b.devices] or None,
            }
            for b in binds
        )
        where: dict[str, Any] = {"hypernode": hypernode} if hypernode else {}
        if enqueued:
            where["enqueued"] = True
        self._announce(
            msg.GangPlaced(**self._base(gang_uid), binds=binds, hypernode=hypernode),
            "placed",
            gang_uid,
            self._audit("placed", gang_uid, {**placed_details(binds), **where}),
        )

    def evicted(self, victim_uid: str, evictions: list[Eviction]) -> None:
        items = tuple(
            msg.PodEviction(
                uid=e.task_uid,
                namespace=e.namespace,
                name=e.name,
                node=e.node,
                reason="release" if e.reason == "gang-release" else e.reason,
            )
            for e in evictions
        )
        self.records.decisions.extend(
            self._decision("evict", victim_uid, e.task_uid, e.node) for e in evictions
        )
        preemptor = evictions[0].preemptor_gang_uid
        by = self.gangs.get(preemptor) if preemptor else None
        self._announce(
            msg.PodsEvicted(**self._base(victim_uid), evictions=items, preemptor=preemptor),
            "evicted",
            victim_uid,
            self._audit(
                "evicted",
                victim_uid,
                {
                    "pods": [e.name for e in evictions],
                    "preemptor": preemptor,
                    "preemptor_name": f"{by.namespace}/{by.name}" if by is not None else None,
                },
                reason=evictions[0].reason,
            ),
        )

    def verdict(self, verdict: GangVerdict, recorded: RecordedVerdicts) -> None:
        if verdict.gang_uid not in self.gangs:
            return
        queue = self.gangs[verdict.gang_uid].queue
        previous = recorded.get(verdict.gang_uid)
        if previous == (verdict.reason, verdict.message, queue):
            return  # unchanged: a gang that waits for many cycles is written once
        self.records.verdicts.append(
            {
                "gang_uid": verdict.gang_uid,
                "namespace": verdict.namespace,
                "name": verdict.name,
                "queue": queue,
                "reason": verdict.reason,
                "condition_reason": verdict.condition_reason,
                "message": verdict.message,
                "cycle": self.stamp.cycle,
            }
        )
        if previous is not None and previous[1] == verdict.message:
            return  # only the reason or the queue changed: the row, not the news
        predicted = {"predicted_start": verdict.predicted_start} if verdict.predicted_start else {}
        self._announce(
            msg.GangUnschedulable(
                **self._base(verdict.gang_uid),
                reason=verdict.reason,
                condition_reason=verdict.condition_reason,
                message=verdict.message,
                predicted_start=verdict.predicted_start,
            ),
            "unschedulable",
            verdict.gang_uid,
            self._audit(
                "unschedulable",
                verdict.gang_uid,
                {"fit_errors": verdict.fit_errors, "detail": verdict.detail, **predicted},
                outcome="pending",
                reason=verdict.reason,
                message=verdict.message,
            ),
        )

    def preempted_for(self, index: int, note: PreemptionNote) -> None:
        """preemptioncost: why these victims, told on the beneficiary's audit stream."""
        if note.gang_uid not in self.gangs:
            return
        why = self._audit(
            "preempted-for",
            note.gang_uid,
            reason="preemptioncost",
            message=note.message,
            details=preemption_details(note),
        )
        event_id = f"audit:{self.stamp.epoch}:{self.stamp.cycle}:preempted-for:{note.gang_uid}:{index}"
        self.records.events.append(audit_event(why, event_id=event_id))

    def conf_news(self, news: AuditRecorded) -> None:
        event_id = f"audit:{self.stamp.epoch}:{self.stamp.cycle}:{news.action}"
        self.records.events.append(audit_event(news, event_id=event_id))

    def _announce(self, data: EventData, what: str, gang_uid: str, audit: AuditRecorded) -> None:
        gang = self.gangs[gang_uid]
        event_id = f"{self.stamp.epoch}:{self.stamp.cycle}:{what}:{gang_uid}"
        # A traced gang's decision is a step of its job's trace (shared/tracing.py).
        context = self.trace_step(
            f"scheduler: {what}",
            gang.annotations,
            {"phalanx.gang": f"{gang.namespace}/{gang.name}", "phalanx.cycle": self.stamp.cycle},
        )
        subject = f"{gang.namespace}/{gang.name}"
        self.records.events.append(
            (
                subjects.decision(gang.namespace, gang.name),
                new_event(data, source=SOURCE, event_id=event_id, subject=subject, traceparent=context),
            )
        )
        self.records.events.append(audit_event(audit, event_id=f"audit:{event_id}", traceparent=context))

    def _base(self, gang_uid: str) -> dict[str, Any]:
        gang = self.gangs[gang_uid]
        return {
            "epoch": self.stamp.epoch,
            "cycle": self.stamp.cycle,
            "gang_uid": gang_uid,
            "namespace": gang.namespace,
            "podgroup": gang.name,
            "valid_until": self.stamp.valid_until,
        }

    def _audit(self, action: str, gang_uid: str, details: dict[str, Any], **extra: Any) -> AuditRecorded:
        gang = self.gangs[gang_uid]
        return AuditRecorded(
            service="scheduler",
            action=action,
            kind="PodGroup",
            namespace=gang.namespace,
            name=gang.name,
            uid=gang_uid,
            # The queue on every event, so `phalanx events watch --queue` needs no other source.
            details={"queue": gang.queue, **details},
            **extra,
        )

    def _decision(
        self, kind: str, gang_uid: str, pod_uid: str | None = None, node: str | None = None
    ) -> dict[str, Any]:
        return {
            "epoch": self.stamp.epoch,
            "cycle": self.stamp.cycle,
            "kind": kind,
            "gang_uid": gang_uid,
            "pod_uid": pod_uid,
            "node": node,
            "devices": None,
            "state": "pending",
        }


def preemption_details(note: PreemptionNote) -> dict[str, Any]:
    """The audit's details of a preemption: the victims, their cost, the cheaper-to-skip others."""

    def victims(items: tuple[VictimCost, ...]) -> list[dict[str, Any]]:
        return [{"job": v.job, "cost": v.cost, "why": v.detail} for v in items]

    return {
        "node": note.node,
        "victims": victims(note.victims),
        "cost": note.cost,
        "alternatives": [
            {"node": node, "victims": victims(items), "cost": cost} for node, items, cost in note.alternatives
        ],
    }


def placed_details(binds: tuple[msg.PodBinding, ...]) -> dict[str, Any]:
    """The audit's details of a placement: each pod's node, and the DRA devices its claims get."""
    details: dict[str, Any] = {"pods": {b.name: b.node for b in binds}}
    devices = {
        b.name: [f"{d.claim}/{d.request}: {d.driver}/{d.pool}/{d.device}" for d in b.devices] for b in binds
    }
    if any(devices.values()):
        details["devices"] = {name: given for name, given in devices.items() if given}
    return details


def _evictions_by_gang(plan: CyclePlan, task_gang: dict[str, str]) -> dict[str, list[Eviction]]:
    grouped: dict[str, list[Eviction]] = defaultdict(list)
    for eviction in plan.evictions:
        gang_uid = task_gang.get(eviction.task_uid)
        if gang_uid:
            grouped[gang_uid].append(eviction)
    return grouped
