"""Composition root of the scheduler: ingester, fenced cycle loop and outbox relay in one process.

`build` makes the parts over the ports it is given (bus, store, clock); `run` makes the real ones.

`ingest` and `cycle` can be switched off to run them as separate replicas; when both run here, the
ingester wakes the cycle as soon as new work lands.
"""

from __future__ import annotations

import asyncio

from sqlalchemy.ext.asyncio import AsyncEngine

from services.scheduler.cycle_loop import CycleLoop
from services.scheduler.decision_backlog import DecisionBacklog
from services.scheduler.ingest import INGESTED_KINDS, Ingester
from services.scheduler.ingest_watermark import IngestWatermark
from services.scheduler.leadership import Leadership
from services.scheduler.settings import SchedulerSettings
from services.scheduler.share_history import ShareHistory
from shared.bus.nats import NatsBus
from shared.bus.permissions import CONTROLLER_DECISIONS_DURABLE
from shared.bus.ports import Bus, ConsumerSpec
from shared.clock import Clock, SystemClock
from shared.messages import subjects
from shared.runtime import Health
from shared.storage import tables
from shared.storage.engine import make_engine, make_sessions
from shared.storage.outbox import OutboxRelay

INGEST_DURABLE = "scheduler-ingest"
INGEST_SUBJECTS = [subjects.cluster_kind(kind) for kind in INGESTED_KINDS]


def build(settings: SchedulerSettings, *, bus: Bus, store: AsyncEngine, clock: Clock) -> Scheduler:
    """The scheduler's parts over the ports it is given (it talks to no Kubernetes API)."""
    sessions = make_sessions(store)
    leadership = Leadership(sessions, holder=settings.holder, lease_seconds=settings.lease_seconds)
    relay = OutboxRelay(sessions, tables.SchedulerOutbox, bus)
    watermark = IngestWatermark(bus, sessions, stream=subjects.CLUSTER_STREAM, durable=INGEST_DURABLE)
    ttl = settings.decision_ttl_seconds
    backlog = DecisionBacklog(
        bus,
        stream=subjects.DECISIONS_STREAM,
        durable=CONTROLLER_DECISIONS_DURABLE,
        window=settings.decision_window_seconds or ttl / 2,
        floor=settings.decision_backlog_floor,
    )
    loop = CycleLoop(
        sessions,
        leadership,
        clock=clock,
        period=settings.cycle_period_seconds,
        decision_ttl=settings.decision_ttl_seconds,
        min_gap=settings.min_cycle_gap_seconds,
        on_committed=relay.kick,
        conf_file=settings.conf_file,
        watermark=watermark,
        decision_window=settings.decision_window_seconds,
        decision_begun_ttl=settings.decision_begun_ttl_seconds,
        backlog=backlog if settings.decision_backlog_floor > 0 else None,
    )
    ingester = Ingester(sessions, scheduler_names=settings.scheduler_names, on_new_work=loop.kick)
    history = ShareHistory(
        sessions, every_seconds=settings.share_history_seconds, keep_hours=settings.share_history_hours
    )
    return Scheduler(settings, bus, leadership, relay, loop, ingester, history)


async def run(settings: SchedulerSettings, health: Health) -> None:
    """Make the real ports (NATS, PostgreSQL), build the scheduler, run it."""
    bus = await NatsBus.connect(settings.nats, name="phalanx-scheduler")
    bus.health = health  # each consumer reports on /readyz whether it keeps up
    engine = make_engine(settings.postgres)
    scheduler = build(settings, bus=bus, store=engine, clock=SystemClock())
    try:
        await scheduler.run(health)
    finally:
        await scheduler.stop()
        await engine.dispose()


class Scheduler:
    """The built scheduler: ingest (when `settings.ingest`), and the cycle, its outbox relay and
    the share history (when `settings.cycle`)."""

    def __init__(
        self,
        settings: SchedulerSettings,
        bus: Bus,
        leadership: Leadership,
        relay: OutboxRelay,
        loop: CycleLoop,
        ingester: Ingester,
        history: ShareHistory,
    ) -> None:
        self.settings = settings
        self.bus = bus
        self.leadership = leadership
        self.relay = relay
        self.loop = loop
        self.ingester = ingester
        self.history = history

    async def run(self, health: Health) -> None:
        settings = self.settings
        tasks: list[asyncio.Task[None]] = []
        try:
            await self.bus.ensure_streams()
            if settings.ingest:
                self.bus.consume_batches(
                    ConsumerSpec(subjects.CLUSTER_STREAM, INGEST_DURABLE, INGEST_SUBJECTS, batch=500),
                    self.ingester.handle,
                )
            if settings.cycle:
                tasks += [
                    asyncio.create_task(self.loop.run()),
                    asyncio.create_task(self.relay.run()),
                    asyncio.create_task(self.history.run()),
                ]
            health.set_ready()
            await asyncio.gather(*tasks) if tasks else await asyncio.Event().wait()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def stop(self) -> None:
        """Give the leadership up (a standby takes over at once), then stop consuming."""
        if self.settings.cycle:
            await self.leadership.release()
        await self.bus.close()
