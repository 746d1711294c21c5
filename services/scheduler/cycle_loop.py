"""Shell: the scheduling loop — read a snapshot, plan, commit the decisions fenced, publish.

Runs while this process leads (see leadership.py), once per period or sooner when the ingester
reports new work. Each cycle reads one consistent snapshot, calls the pure `plan_cycle`, and
writes, in one transaction fenced by the leader's epoch: the decisions (enqueue, bind, evict), the
verdicts for unplaced gangs, and the messages that announce them into the outbox — one message
per gang, never one per pod. The outbox relay publishes them after the commit.

Each decision says by when (the database's clock) the controller may carry it out: half its
time-to-live by default. A new leader does not cycle before ingest has caught up with the cluster
(ingest_watermark.py), and an unconfirmed decision stops counting as allocated only once ingest
has caught up past its time-to-live; the same fenced commit marks it expired.

The configuration is volcano-scheduler.conf from a file (SCHEDULER_CONF_FILE) or else from the
ConfigMap the ingester keeps in `scheduler_config`; a change is picked up at the next cycle. A
text that does not parse keeps the previous configuration; the error is logged and recorded on
the audit stream (`scheduler.configuration-rejected`), as a successful load is
(`scheduler.configuration-loaded`, whose message warns of any plugin or action skipped, also
counted by the `phalanx_scheduler_conf_skipped_entries` gauge).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import structlog
from sqlalchemy import delete, insert, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.scheduler.core.config import SchedulerConf, load_conf
from services.scheduler.core.cycle import plan_cycle
from services.scheduler.core.plan import CyclePlan
from services.scheduler.core.snapshot import Snapshot
from services.scheduler.ingest_watermark import IngestWatermark
from services.scheduler.leadership import Leadership, LostLeadership
from services.scheduler.metrics import (
    CONF_SKIPPED_ENTRIES,
    CYCLE_PHASE_SECONDS,
    CycleMetrics,
    LeadershipWatch,
    record_error,
)
from services.scheduler.snapshot_reader import ShellMemory, read_snapshot
from shared import failpoints, tracing
from shared.clock import Clock
from shared.messages import decisions as msg
from shared.messages import subjects
from shared.messages.audit import AuditRecorded
from shared.messages.envelope import CloudEvent, EventData, new_event
from shared.storage import outbox, tables

log = structlog.get_logger()
SOURCE = "phalanx/scheduler"
# Where Volcano keeps the scheduler's configuration; named in the audit of a (re)load.
CONF_NAMESPACE, CONF_NAME = "volcano-system", "volcano-scheduler-configmap"


class CycleLoop:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        leadership: Leadership,
        *,
        clock: Clock,
        period: float,
        decision_ttl: float,
        min_gap: float = 0.0,
        on_committed: Any = lambda: None,
        conf_file: str | None = None,
        watermark: IngestWatermark | None = None,
        decision_window: float | None = None,
    ) -> None:
        """`decision_window`: how long after its commit the controller may carry a decision out
        (half of `decision_ttl` unless given). `watermark`: ingest's progress; without one,
        decisions expire at their time-to-live by this process's clock and cycles start at once."""
        self._sessions = sessions
        self._leadership = leadership
        self._clock = clock
        self._period = period
        self._min_gap = min_gap
        self._ttl = timedelta(seconds=decision_ttl)
        self._window = timedelta(seconds=decision_window if decision_window is not None else decision_ttl / 2)
        if self._window >= self._ttl:
            raise ValueError("decision_window must be shorter than decision_ttl")
        self._watermark = watermark
        self._gate: tuple[int | None, datetime | None] = (None, None)  # (epoch, caught up since)
        self._on_committed = on_committed
        self._conf_file = conf_file
        self._conf: SchedulerConf | None = None
        self._conf_text: str | None = None
        self._conf_news: AuditRecorded | None = None  # a (re)load not yet on the audit stream
        self._wake = asyncio.Event()
        self.memory = ShellMemory()
        self._mirror_epoch: int | None = None
        self.cycle = 0
        self.last_plan: CyclePlan | None = None
        self._metrics = CycleMetrics()
        self._leading = LeadershipWatch()

    def kick(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        while True:
            started = time.monotonic()
            try:
                leading = await self._leadership.try_acquire_or_renew()
                self._leading.observe(self._leadership.epoch)
                if leading and await self._caught_up():
                    await self.run_once()
            except asyncio.CancelledError:
                raise
            except LostLeadership as lost:
                log.warning("leadership lost; standing by", reason=str(lost))
            except Exception:
                log.exception("cycle failed")
                record_error()
                # What failed may have been half applied: read the cluster whole next time.
                self.memory.mirror.reset()
            self._leading.observe(self._leadership.epoch)
            took = time.monotonic() - started
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._period)
            # Each cycle reads the whole snapshot, so kicks that come faster than the gap (one per
            # ingested batch while pods pour in) wait for it and are served by one cycle. A cycle
            # that took longer than the gap stretches it: on a large cluster under load, cycles
            # then take at most about half of this process's time, the ingester the rest, and
            # each cycle places what gathered meanwhile.
            rest = max(self._min_gap, took) - (time.monotonic() - started)
            if rest > 0:
                await asyncio.sleep(rest)
            self._wake.clear()

    async def _caught_up(self) -> bool:
        """Whether ingest has caught up with what was published before this leadership began.

        Probes the watermark once per cycle. A new leader (after a restart or a takeover) plans
        on the tables ingest writes; until they hold what the cluster held when it took over,
        bound pods would look pending and their nodes free."""
        if self._watermark is None:
            return True
        epoch, since = self._gate
        if epoch != self._leadership.epoch:
            probed = await self._watermark.probe()
            epoch, since = self._gate = (self._leadership.epoch, probed)
            log.info("leading; the first cycle waits for ingest to catch up", epoch=epoch)
        else:
            await self._watermark.probe()
        caught = self._watermark.caught_up_as_of
        return caught is not None and since is not None and caught >= since

    def _expire_before(self) -> datetime | None:
        """Pending decisions created before this stop counting: past their time-to-live, and
        ingest caught up with the cluster past that time, so a late bind has been seen."""
        if self._watermark is None:
            return self._clock.now() - self._ttl
        caught = self._watermark.caught_up_as_of
        return None if caught is None else caught - self._ttl

    async def run_once(self) -> CyclePlan:
        started = time.perf_counter()
        if self._mirror_epoch != self._leadership.epoch:
            # Gaining leadership reads the cluster whole: a standby's mirror may be stale, and
            # the verdicts were written by another leader meanwhile.
            self.memory.mirror.reset()
            self._mirror_epoch = self._leadership.epoch
        expire_before = self._expire_before()
        async with self._sessions() as session, session.begin():
            read = await read_snapshot(
                session, now=self._clock.now(), expire_before=expire_before, memory=self.memory
            )
        read_done = time.perf_counter()
        conf = self._current_conf(read.conf_text)
        plan = plan_cycle(read.snapshot, conf)
        planned = time.perf_counter()
        self.cycle += 1
        await self._commit(plan, read.snapshot, read.verdicts, expire_before)
        await failpoints.hit("sched.after_decide_commit")
        self._remember(plan, read.snapshot)
        self.last_plan = plan
        done = time.perf_counter()
        CYCLE_PHASE_SECONDS.labels("read").observe(read_done - started)
        CYCLE_PHASE_SECONDS.labels("plan").observe(planned - read_done)
        CYCLE_PHASE_SECONDS.labels("commit").observe(done - planned)
        self._metrics.record(plan, read.snapshot, took_seconds=done - started, now=self._clock.now())
        return plan

    def _current_conf(self, stored: str | None) -> SchedulerConf:
        # A configured file wins over the ConfigMap; reading it each cycle picks up edits.
        text = Path(self._conf_file).read_text() if self._conf_file else stored
        if self._conf is None or text != self._conf_text:
            loaded = load_conf(text, self._conf)
            source = self._conf_file or f"ConfigMap {CONF_NAMESPACE}/{CONF_NAME}"
            if loaded.error:
                log.error(
                    "invalid scheduler configuration; keeping the previous",
                    error=str(loaded.error),
                    source=source,
                )
                self._conf_news = self._conf_audit("configuration-rejected", "failed", str(loaded.error))
            elif loaded.changed:
                log.info("scheduler configuration loaded", actions=list(loaded.conf.actions), source=source)
                skipped = loaded.conf.skipped
                if skipped:
                    log.warning(
                        "scheduler configuration entries skipped", skipped=list(skipped), source=source
                    )
                CONF_SKIPPED_ENTRIES.set(len(skipped))
                warning = "warning: " + "; ".join(skipped) if skipped else ""
                self._conf_news = self._conf_audit("configuration-loaded", "done", warning)
            self._conf, self._conf_text = loaded.conf, text
        assert self._conf is not None
        return self._conf

    def _conf_audit(self, action: str, outcome: str, message: str) -> AuditRecorded:
        return AuditRecorded(
            service="scheduler",
            action=action,
            kind="ConfigMap" if not self._conf_file else "File",
            namespace=CONF_NAMESPACE if not self._conf_file else None,
            name=CONF_NAME if not self._conf_file else self._conf_file,
            outcome=outcome,
            message=message,
        )

    async def _commit(
        self,
        plan: CyclePlan,
        snapshot: Snapshot,
        recorded: Mapping[str, tuple[str, str, str]],
        expire_before: datetime | None,
    ) -> None:
        gangs = {g.uid: g for g in snapshot.gangs}
        task_gang = {t.uid: g.uid for g in snapshot.gangs for t in g.tasks}
        rows: list[dict[str, Any]] = []
        events: list[tuple[str, CloudEvent[Any]]] = []

        async with self._sessions() as session, session.begin():
            epoch = await self._leadership.fence(session)
            cycle = self.cycle
            fenced_at = self._leadership.fenced_at
            valid_until = fenced_at + self._window if fenced_at is not None else None
            if expire_before is not None:
                # The one place a decision stops counting: the snapshot just read left these out.
                await session.execute(
                    update(tables.Decision)
                    .where(tables.Decision.state == "pending", tables.Decision.created_at <= expire_before)
                    .values(state="expired")
                )

            def announce(data: EventData, what: str, gang_uid: str, audit: AuditRecorded) -> None:
                gang = gangs[gang_uid]
                event_id = f"{epoch}:{cycle}:{what}:{gang_uid}"
                # A traced gang's decision is a step of its job's trace (shared/tracing.py).
                context = tracing.step(
                    f"scheduler: {what}",
                    gang.annotations.get(tracing.TRACEPARENT_ANNOTATION),
                    {"phalanx.gang": f"{gang.namespace}/{gang.name}", "phalanx.cycle": cycle},
                )
                subject = f"{gang.namespace}/{gang.name}"
                events.append(
                    (
                        subjects.decision(gang.namespace, gang.name),
                        new_event(
                            data, source=SOURCE, event_id=event_id, subject=subject, traceparent=context
                        ),
                    )
                )
                events.append(
                    (
                        subjects.audit("scheduler", audit.action, gang.namespace, gang.name),
                        new_event(audit, source=SOURCE, event_id=f"audit:{event_id}", traceparent=context),
                    )
                )

            def base(gang_uid: str) -> dict[str, Any]:
                gang = gangs[gang_uid]
                return {
                    "epoch": epoch,
                    "cycle": cycle,
                    "gang_uid": gang_uid,
                    "namespace": gang.namespace,
                    "podgroup": gang.name,
                    "valid_until": valid_until,
                }

            def audit(action: str, gang_uid: str, details: dict[str, Any], **extra: Any) -> AuditRecorded:
                gang = gangs[gang_uid]
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

            for gang_uid in plan.enqueued:
                rows.append(_decision(epoch, cycle, "enqueue", gang_uid))
                announce(
                    msg.GangEnqueued(**base(gang_uid)),
                    "enqueued",
                    gang_uid,
                    audit("enqueued", gang_uid, details={}),
                )
            for placed in plan.binds:
                binds = tuple(
                    msg.Bind(uid=b.task_uid, namespace=b.namespace, name=b.name, node=b.node)
                    for b in placed.binds
                )
                rows.extend(
                    _decision(epoch, cycle, "bind", placed.gang_uid, b.task_uid, b.node) for b in placed.binds
                )
                announce(
                    msg.GangPlaced(**base(placed.gang_uid), binds=binds),
                    "placed",
                    placed.gang_uid,
                    audit("placed", placed.gang_uid, details={"pods": {b.name: b.node for b in binds}}),
                )
            for victim_uid, evictions in _by_gang(plan, task_gang).items():
                items = tuple(
                    msg.Eviction(
                        uid=e.task_uid,
                        namespace=e.namespace,
                        name=e.name,
                        node=e.node,
                        reason="release" if e.reason == "gang-release" else e.reason,
                    )
                    for e in evictions
                )
                rows.extend(
                    _decision(epoch, cycle, "evict", victim_uid, e.task_uid, e.node) for e in evictions
                )
                preemptor = evictions[0].preemptor_gang_uid
                announce(
                    msg.PodsEvicted(**base(victim_uid), evictions=items, preemptor=preemptor),
                    "evicted",
                    victim_uid,
                    audit(
                        "evicted",
                        victim_uid,
                        reason=evictions[0].reason,
                        details={
                            "pods": [e.name for e in evictions],
                            "preemptor": preemptor,
                            "preemptor_name": (
                                f"{gangs[preemptor].namespace}/{gangs[preemptor].name}"
                                if preemptor in gangs
                                else None
                            ),
                        },
                    ),
                )
            verdict_rows: list[dict[str, Any]] = []
            for verdict in plan.verdicts:
                if verdict.gang_uid not in gangs:
                    continue
                queue = gangs[verdict.gang_uid].queue
                previous = recorded.get(verdict.gang_uid)
                if previous == (verdict.reason, verdict.message, queue):
                    continue  # unchanged: a gang that waits for many cycles is written once
                verdict_rows.append(
                    {
                        "gang_uid": verdict.gang_uid,
                        "namespace": verdict.namespace,
                        "name": verdict.name,
                        "queue": queue,
                        "reason": verdict.reason,
                        "condition_reason": verdict.condition_reason,
                        "message": verdict.message,
                        "cycle": cycle,
                    }
                )
                if previous is None or previous[1] != verdict.message:
                    announce(
                        msg.GangUnschedulable(
                            **base(verdict.gang_uid),
                            reason=verdict.reason,
                            condition_reason=verdict.condition_reason,
                            message=verdict.message,
                        ),
                        "unschedulable",
                        verdict.gang_uid,
                        audit(
                            "unschedulable",
                            verdict.gang_uid,
                            outcome="pending",
                            reason=verdict.reason,
                            message=verdict.message,
                            details={"fit_errors": verdict.fit_errors, "detail": verdict.detail},
                        ),
                    )
            news = self._conf_news
            if news is not None:
                events.append(
                    (
                        subjects.audit("scheduler", news.action, news.namespace, news.name),
                        new_event(news, source=SOURCE, event_id=f"audit:{epoch}:{cycle}:{news.action}"),
                    )
                )
            if rows:
                await session.execute(insert(tables.Decision), rows)
            placed_uids = [p.gang_uid for p in plan.binds]
            if placed_uids:
                await session.execute(
                    delete(tables.GangVerdict).where(tables.GangVerdict.gang_uid.in_(placed_uids))
                )
            if verdict_rows:
                statement = pg_insert(tables.GangVerdict).values(verdict_rows)
                statement = statement.on_conflict_do_update(
                    index_elements=["gang_uid"],
                    set_={
                        c: statement.excluded[c]
                        for c in (
                            "namespace",
                            "name",
                            "queue",
                            "reason",
                            "condition_reason",
                            "message",
                            "cycle",
                        )
                    },
                )
                await session.execute(statement)
            if events:
                outbox.enqueue_many(session, tables.SchedulerOutbox, events)
        # Committed: the mirror now holds the verdicts as the table does, so that no cycle reads
        # them back.
        self.memory.mirror.recorded(
            {r["gang_uid"]: (r["reason"], r["message"], r["queue"]) for r in verdict_rows}, placed_uids
        )
        if news is not None and self._conf_news is news:
            self._conf_news = None
        if events:
            self._on_committed()

    def _remember(self, plan: CyclePlan, snapshot: Snapshot) -> None:
        self.memory.nominations = {n.task_uid: n.node for n in plan.nominations}
        underfilled = set(plan.underfilled)
        self.memory.below_min_since = {
            uid: self.memory.below_min_since.get(uid, snapshot.now) for uid in underfilled
        }


def _decision(
    epoch: int, cycle: int, kind: str, gang_uid: str, pod_uid: str | None = None, node: str | None = None
) -> dict[str, Any]:
    return {
        "epoch": epoch,
        "cycle": cycle,
        "kind": kind,
        "gang_uid": gang_uid,
        "pod_uid": pod_uid,
        "node": node,
        "state": "pending",
    }


def _by_gang(plan: CyclePlan, task_gang: dict[str, str]) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = defaultdict(list)
    for eviction in plan.evictions:
        gang_uid = task_gang.get(eviction.task_uid)
        if gang_uid:
            grouped[gang_uid].append(eviction)
    return grouped
