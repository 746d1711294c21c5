"""Composition root of the scheduler: ingester, fenced cycle loop and outbox relay in one process.

`ingest` and `cycle` can be switched off to run them as separate replicas; when both run here, the
ingester wakes the cycle as soon as new work lands.
"""

from __future__ import annotations

import asyncio

from services.scheduler.cycle_loop import CycleLoop
from services.scheduler.ingest import INGESTED_KINDS, Ingester
from services.scheduler.ingest_watermark import IngestWatermark
from services.scheduler.leadership import Leadership
from services.scheduler.settings import SchedulerSettings
from services.scheduler.share_history import ShareHistory
from shared.bus.nats import Bus, ConsumerSpec
from shared.clock import SystemClock
from shared.messages import subjects
from shared.runtime import Health
from shared.storage import tables
from shared.storage.engine import make_engine, make_sessions
from shared.storage.outbox import OutboxRelay

INGEST_DURABLE = "scheduler-ingest"
INGEST_SUBJECTS = [f"cluster.{kind.lower()}.>" for kind in INGESTED_KINDS]


async def run(settings: SchedulerSettings, health: Health) -> None:
    bus = await Bus.connect(settings.nats, name="phalanx-scheduler")
    bus.health = health  # each consumer reports on /readyz whether it keeps up
    engine = make_engine(settings.postgres)
    sessions = make_sessions(engine)
    leadership = Leadership(sessions, holder=settings.holder, lease_seconds=settings.lease_seconds)
    relay = OutboxRelay(sessions, tables.SchedulerOutbox, bus)
    watermark = IngestWatermark(bus.js, sessions, stream=subjects.CLUSTER_STREAM, durable=INGEST_DURABLE)
    loop = CycleLoop(
        sessions,
        leadership,
        clock=SystemClock(),
        period=settings.cycle_period_seconds,
        decision_ttl=settings.decision_ttl_seconds,
        min_gap=settings.min_cycle_gap_seconds,
        on_committed=relay.kick,
        conf_file=settings.conf_file,
        watermark=watermark,
        decision_window=settings.decision_window_seconds,
    )
    tasks: list[asyncio.Task[None]] = []
    try:
        await bus.ensure_streams()
        if settings.ingest:
            ingester = Ingester(sessions, scheduler_names=settings.scheduler_names, on_new_work=loop.kick)
            bus.consume_batches(
                ConsumerSpec(subjects.CLUSTER_STREAM, INGEST_DURABLE, INGEST_SUBJECTS, batch=500),
                ingester.handle,
            )
        if settings.cycle:
            history = ShareHistory(
                sessions,
                every_seconds=settings.share_history_seconds,
                keep_hours=settings.share_history_hours,
            )
            tasks += [
                asyncio.create_task(loop.run()),
                asyncio.create_task(relay.run()),
                asyncio.create_task(history.run()),
            ]
        health.set_ready()
        await asyncio.gather(*tasks) if tasks else await asyncio.Event().wait()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if settings.cycle:
            await leadership.release()
        await bus.close()
        await engine.dispose()
