"""Shell: the scheduling loop — read a snapshot, plan, commit the decisions fenced, publish.

Runs while this process leads (see leadership.py), once per period or sooner when the ingester
reports new work. Each cycle reads one consistent snapshot, calls the pure `plan_cycle`, and
writes, in one transaction fenced by the leader's epoch: the decisions (enqueue, bind, evict), the
verdicts for unplaced gangs, and the messages that announce them into the outbox — one message
per gang, never one per pod (what the plan becomes is the pure core/cycle_records.py; this
shell fences, expires and writes). The outbox relay publishes them after the commit.

Each decision says by when (the database's clock) the controller may carry it out: half its
time-to-live by default. A new leader does not cycle before ingest has caught up with the cluster
(ingest_watermark.py), and an unconfirmed decision stops counting as allocated only once ingest
has caught up past its time-to-live; the same fenced commit marks it expired. A bind of a gang
whose decision has begun (a sibling bind confirmed) counts longer, up to `decision_begun_ttl`:
the controller carries every bind of a begun decision out, however late (decision_expiry.py).

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
import gc
import time
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.scheduler.core.config import SchedulerConf, load_conf
from services.scheduler.core.cycle import plan_cycle
from services.scheduler.core.cycle_records import CycleStamp, cycle_records
from services.scheduler.core.fairshare import PLUGIN as FAIRSHARE
from services.scheduler.core.plan import CyclePlan
from services.scheduler.core.reservation import BackfillSettings
from services.scheduler.core.snapshot import QueueUsage, Snapshot
from services.scheduler.cycle_writes import expire as _expire
from services.scheduler.cycle_writes import write_records as _write_records
from services.scheduler.decision_backlog import DecisionBacklog
from services.scheduler.decision_expiry import BEGUN_TTL_FACTOR, DecisionExpiry
from services.scheduler.eviction_history import with_recent_evictions
from services.scheduler.ingest_watermark import IngestWatermark
from services.scheduler.leadership import Leadership, LostLeadership
from services.scheduler.metrics import (
    CONF_SKIPPED_ENTRIES,
    CYCLE_PHASE_SECONDS,
    CycleMetrics,
    LeadershipWatch,
    record_error,
)
from services.scheduler.queue_usage import UsageBook
from services.scheduler.queue_usage import write as write_usage
from services.scheduler.runtime_records import Runs, RuntimeRecords
from services.scheduler.snapshot_reader import ReadResult, ShellMemory, read_snapshot
from shared import failpoints, tracing
from shared.clock import Clock
from shared.messages.audit import AuditRecorded
from shared.storage import tables
from shared.storage.unit_of_work import unit_of_work
from shared.volcano.keys import TRACEPARENT

log = structlog.get_logger()
# Where Volcano keeps the scheduler's configuration; named in the audit of a (re)load.
CONF_NAMESPACE, CONF_NAME = "volcano-system", "volcano-scheduler-configmap"
# How often the heap kept between cycles is frozen again (_freeze_heap), besides each full read.
REFREEZE_CYCLES = 1000


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
        decision_begun_ttl: float | None = None,
        backlog: DecisionBacklog | None = None,
    ) -> None:
        """`decision_window`: how long after its commit the controller may carry a decision out
        (half of `decision_ttl` unless given). `watermark`: ingest's progress; without one,
        decisions expire at their time-to-live by this process's clock and cycles start at once.
        `decision_begun_ttl`: how long an unconfirmed bind of a begun gang decision keeps
        counting (ten times `decision_ttl` unless given, and never less than it). `backlog`: the
        controller's decision queue; while it lags, no cycle runs (decision_backlog.py)."""
        self._sessions = sessions
        self._leadership = leadership
        self._clock = clock
        self._period = period
        self._min_gap = min_gap
        self._ttl = timedelta(seconds=decision_ttl)
        self._window = timedelta(seconds=decision_window if decision_window is not None else decision_ttl / 2)
        if self._window >= self._ttl:
            raise ValueError("decision_window must be shorter than decision_ttl")
        self._begun_ttl = timedelta(
            seconds=decision_begun_ttl if decision_begun_ttl is not None else decision_ttl * BEGUN_TTL_FACTOR
        )
        if self._begun_ttl < self._ttl:
            raise ValueError("decision_begun_ttl must not be shorter than decision_ttl")
        self._watermark = watermark
        self._backlog = backlog
        self._gate: tuple[int | None, datetime | None] = (None, None)  # (epoch, caught up since)
        self._on_committed = on_committed
        self._conf_file = conf_file
        self._conf: SchedulerConf | None = None
        self._planned_conf: SchedulerConf | None = None  # the configuration of the last plan
        self._since_freeze = 0  # cycles since the kept heap was last frozen (_freeze_heap)
        self._conf_text: str | None = None
        self._conf_news: AuditRecorded | None = None  # a (re)load not yet on the audit stream
        self._wake = asyncio.Event()
        self.memory = ShellMemory()
        self.runtimes = RuntimeRecords()  # reservation backfill only (runtime_records.py)
        self.usage = UsageBook()  # fairshare only (queue_usage.py)
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
                if leading and await self._caught_up() and not await self._held_back():
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

    async def _held_back(self) -> bool:
        """Whether the controller lags so far behind that a decision made now would expire
        before it is reached: then nothing new is decided this time (decision_backlog.py)."""
        return self._backlog is not None and await self._backlog.held_back(epoch=self._leadership.epoch)

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

    def _expire_before(self) -> DecisionExpiry | None:
        """Pending decisions created before this stop counting: past their time-to-live, and
        ingest caught up with the cluster past that time, so a late bind has been seen (a begun
        gang decision's binds: past `decision_begun_ttl`)."""
        caught = self._clock.now() if self._watermark is None else self._watermark.caught_up_as_of
        if caught is None:
            return None
        return DecisionExpiry(caught - self._ttl, caught - self._begun_ttl, self._leadership.epoch)

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
        self._since_freeze += 1
        if self.memory.mirror.full_read or self._since_freeze >= REFREEZE_CYCLES:
            _freeze_heap()
            self._since_freeze = 0
        read_done = time.perf_counter()
        conf = self._current_conf(read.conf_text)
        if self._nothing_to_do(read, conf):
            # Nothing changed and nothing waits: the plan would be the last one again. Still
            # fenced, and expiring what stopped counting, as every cycle does.
            async with self._sessions() as session, session.begin():
                await self._leadership.fence(session)
                # Holding the leader row as a planning cycle's commit does: a link that dies here
                # is the same fault (tests/integration/faults/test_blackholed_leader.py).
                await failpoints.hit("sched.inside_fenced_commit")
                await _expire(session, expire_before)
            assert self.last_plan is not None
            took = time.perf_counter() - started
            self._metrics.record(self.last_plan, read.snapshot, took_seconds=took, now=self._clock.now())
            return self.last_plan
        self._planned_conf = conf
        snapshot, runs = read.snapshot, None
        if BackfillSettings.of(conf).mode != "none":  # runtime records feed reservation backfill
            snapshot = await self.runtimes.prepare(self._sessions, snapshot, self._leadership.epoch)
            runs = self.runtimes.changes(snapshot)
        if conf.enabled(FAIRSHARE):  # usage over time, persisted by the leader (queue_usage.py)
            snapshot = await self.usage.prepare(self._sessions, snapshot, self._leadership.epoch)
        snapshot = await with_recent_evictions(self._sessions, snapshot, conf)  # preemptioncost's budgets
        plan = plan_cycle(snapshot, conf, self.last_plan.node_base if self.last_plan is not None else None)
        planned = time.perf_counter()
        self.cycle += 1
        usage = self.usage.due(plan.queue_usage)
        await self._commit(plan, read.snapshot, read.verdicts, expire_before, runs, usage)
        if runs is not None:
            self.runtimes.committed(runs)
        self.usage.committed(plan.queue_usage, written=usage is not None)
        await failpoints.hit("sched.after_decide_commit")
        self._remember(plan, read.snapshot)
        self.last_plan = plan
        done = time.perf_counter()
        CYCLE_PHASE_SECONDS.labels("read").observe(read_done - started)
        CYCLE_PHASE_SECONDS.labels("plan").observe(planned - read_done)
        CYCLE_PHASE_SECONDS.labels("commit").observe(done - planned)
        self._metrics.record(plan, read.snapshot, took_seconds=done - started, now=self._clock.now())
        return plan

    def _nothing_to_do(self, read: ReadResult, conf: SchedulerConf) -> bool:
        """Whether planning would only repeat the last plan: no row, pending decision or
        configuration changed since it, it decided nothing, and every gang is settled (nothing
        pending, nothing releasing: core/settled.py). Features that change with time alone
        (fairshare's decaying usage, reservation backfill's estimates) always plan."""
        last, settled = self.last_plan, read.snapshot.settled
        return (
            read.quiet
            and last is not None
            and conf is self._planned_conf
            and self._conf_news is None
            and settled is not None
            and len(settled.uids) == len(read.snapshot.gangs)
            and not (last.enqueued or last.binds or last.evictions or last.nominations)
            and not (last.underfilled or last.released or last.predictions or last.preemptions)
            and not conf.enabled(FAIRSHARE)
            and BackfillSettings.of(conf).mode == "none"
        )

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
        expire_before: DecisionExpiry | None,
        runs: Runs | None = None,
        usage: QueueUsage | None = None,
    ) -> None:
        """Write the plan's records (core/cycle_records.py) in one transaction fenced by the
        leader's epoch, with the expiry of the decisions that stopped counting."""
        async with unit_of_work(self._sessions, tables.SchedulerOutbox, wake=self._on_committed) as work:
            session = work.session
            epoch = await self._leadership.fence(session)
            await failpoints.hit("sched.inside_fenced_commit")  # holding the leader row
            fenced_at = self._leadership.fenced_at
            valid_until = fenced_at + self._window if fenced_at is not None else None
            await _expire(session, expire_before)
            news = self._conf_news
            records = cycle_records(
                plan,
                snapshot,
                recorded,
                CycleStamp(epoch, self.cycle, valid_until),
                conf_news=news,
                trace_step=_trace_step,
            )
            await _write_records(session, records)
            work.publish_all_after(records.events)  # the relay publishes them after the commit
            if self._backlog is not None:  # counted as waiting until the next probe
                self._backlog.published(records.events)
            if runs is not None:
                await self.runtimes.write(session, runs)
            if usage is not None:
                await write_usage(session, usage)
        # Committed: the mirror now holds the verdicts as the table does, so that no cycle reads
        # them back.
        self.memory.mirror.recorded(
            {r["gang_uid"]: (r["reason"], r["message"], r["queue"]) for r in records.verdicts},
            records.placed_gang_uids,
        )
        if news is not None and self._conf_news is news:
            self._conf_news = None

    def _remember(self, plan: CyclePlan, snapshot: Snapshot) -> None:
        self.memory.nominations = {n.task_uid: n.node for n in plan.nominations}
        underfilled = set(plan.underfilled)
        self.memory.below_min_since = {
            uid: self.memory.below_min_since.get(uid, snapshot.now) for uid in underfilled
        }


def _trace_step(name: str, annotations: Mapping[str, str], attributes: Mapping[str, Any]) -> str | None:
    """A traced gang's decision is a step of its job's trace (shared/tracing.py)."""
    return tracing.step(name, annotations.get(TRACEPARENT), attributes)


def _freeze_heap() -> None:
    """Leave the rows and objects the cycle keeps between cycles out of the cyclic garbage
    collector: at 50,000 pods they are millions of objects, and each full collection walked them
    all (a third of a second, at whatever allocation in the cycle set it off). Unfrozen and
    collected first, so that no garbage is frozen with them and cyclic garbage among what was
    frozen last time is freed; what is dropped meanwhile is still freed by its count."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
