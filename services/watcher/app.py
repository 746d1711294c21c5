"""Composition root of the watcher: one `KindWatcher` per watched kind over one API client and bus,
each run only while this replica holds the kind's lease (kind_leases.py), and a readiness report
that says which kind's watch keeps breaking.

Every `lease_seconds / 3` the replica renews its kinds with their resume points and takes any
kind whose lease ran out: a standby (a second replica) takes a dead one's kinds within a lease
and resumes their watches where they stood. A kind found taken by another replica is stopped.

`build` makes the parts over the ports it is given (bus, store, Kubernetes API); `run` makes the
real ones, builds and runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable, Iterable

import structlog
from kubernetes_asyncio import client
from prometheus_client import Gauge
from sqlalchemy.ext.asyncio import AsyncEngine

from services.watcher.kind_leases import KindLeases, Taken
from services.watcher.settings import WatcherSettings
from services.watcher.watched_kinds import WATCHED
from services.watcher.watching import KindWatcher
from shared.bus.nats import NatsBus
from shared.bus.ports import Bus
from shared.kube.client import make_api_client
from shared.runtime import Health
from shared.storage.engine import make_engine, make_sessions

log = structlog.get_logger()
PUBLISHING = Gauge(
    "phalanx_watcher_kinds_published", "Watched kinds this replica publishes (holds the lease of)."
)
# Relists in a row that must fail before the watcher reports itself not ready (one failure is
# a normal event: a 410 Gone, a restarted API server).
BROKEN_AFTER = 3


class Publishing:
    """The kinds this replica publishes now: each one's watcher task and the epoch it holds."""

    def __init__(self, watchers: dict[str, KindWatcher]) -> None:
        self.watchers = watchers
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.epochs: dict[str, int] = {}

    def active(self) -> list[KindWatcher]:
        return [self.watchers[kind] for kind in self.tasks]

    def held(self) -> dict[str, tuple[int, str]]:
        return {kind: (epoch, self.watchers[kind].resume_point) for kind, epoch in self.epochs.items()}

    def start(self, taken: Taken) -> None:
        watcher = self.watchers[taken.kind]
        watcher.synced.clear()
        self.epochs[taken.kind] = taken.epoch
        self.tasks[taken.kind] = asyncio.create_task(watcher.run(taken.resume_from))
        log.info("publishing a kind", kind=taken.kind, resumed_from=taken.resume_from or "a relist")

    async def stop(self, kind: str) -> None:
        self.epochs.pop(kind, None)
        task = self.tasks.pop(kind, None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        log.info("another replica publishes a kind now", kind=kind)

    async def stop_all(self) -> None:
        for kind in list(self.tasks):
            await self.stop(kind)


def build(settings: WatcherSettings, *, bus: Bus, store: AsyncEngine, kube: client.ApiClient) -> Watcher:
    """The watcher's parts over the ports it is given: one `KindWatcher` per watched kind."""
    leases = KindLeases(
        make_sessions(store),
        holder=settings.holder or f"{socket.gethostname()}/watcher-{settings.replica}",
        lease_seconds=settings.lease_seconds,
    )
    watchers = {
        kind.kind: KindWatcher(
            kube,
            bus,
            kind,
            scheduler_names=settings.scheduler_names,
            watch_timeout=settings.watch_timeout_seconds,
        )
        for kind in WATCHED
    }
    return Watcher(bus, leases, Publishing(watchers))


async def run(settings: WatcherSettings, health: Health) -> None:
    """Make the real ports (NATS, PostgreSQL, the Kubernetes API), build the watcher, run it."""
    bus = await NatsBus.connect(settings.nats, name="phalanx-watcher")
    api = await make_api_client(settings.kubeconfig)
    engine = make_engine(settings.postgres)
    watcher = build(settings, bus=bus, store=engine, kube=api)
    try:
        await watcher.run(health)
    finally:
        await watcher.stop()
        await api.close()
        await bus.close()
        await engine.dispose()


class Watcher:
    """The built watcher: takes the kinds' leases, publishes the kinds it holds, reports readiness."""

    def __init__(self, bus: Bus, leases: KindLeases, publishing: Publishing) -> None:
        self.bus = bus
        self.leases = leases
        self.publishing = publishing

    async def run(self, health: Health) -> None:
        leases, publishing = self.leases, self.publishing
        await self.bus.ensure_streams()
        while True:  # which kinds are ours must be known before any is published
            try:
                await _lease_round(leases, publishing)
                break
            except Exception as error:
                log.warning("kind leases not readable yet; trying again", error=str(error))
                await asyncio.sleep(1.0)
        await asyncio.gather(*(publishing.watchers[kind].synced.wait() for kind in publishing.tasks))
        health.set_ready(_readiness(publishing))
        readiness = _report_readiness(publishing.active, health, lambda: _readiness(publishing))
        await asyncio.gather(_keep_leases(leases, publishing), readiness)

    async def stop(self) -> None:
        """Stop publishing and give the kinds up, so a standby takes them at once."""
        held = self.publishing.held()
        await self.publishing.stop_all()
        with contextlib.suppress(Exception):  # else a standby waits the leases out
            await self.leases.release(held)


async def _lease_round(leases: KindLeases, publishing: Publishing) -> None:
    kept, taken = await leases.step(publishing.held(), publishing.watchers)
    for kind in set(publishing.epochs) - kept:
        await publishing.stop(kind)
    for each in taken:
        publishing.start(each)
    PUBLISHING.set(len(publishing.tasks))


async def _keep_leases(leases: KindLeases, publishing: Publishing) -> None:
    while True:
        await asyncio.sleep(leases.lease / 3)
        try:
            await _lease_round(leases, publishing)
        except Exception as error:
            # PostgreSQL is away: keep publishing what we hold (kind_leases.py says why it is safe).
            log.warning("kind lease renewal failed; publishing on", error=str(error))


def _readiness(publishing: Publishing) -> str:
    if not publishing.tasks:
        return "standing by: every kind is published by another replica"
    return f"publishing {len(publishing.tasks)} of {len(publishing.watchers)} kinds"


async def _report_readiness(
    active: Callable[[], Iterable[KindWatcher]], health: Health, detail: Callable[[], str] = lambda: "ready"
) -> None:
    """Not ready, with the reason, while a kind's watch keeps breaking: nothing of that kind
    reaches the consumers then, and an operator must hear of it."""
    while True:
        broken = [w for w in active() if w.failures >= BROKEN_AFTER]
        if broken:
            health.set_not_ready(
                "; ".join(
                    f"{w.kind} watch failed {w.failures} times in a row: {w.last_error}" for w in broken
                )
            )
        elif not health.ready or health.detail != detail():
            health.set_ready(detail())
        await asyncio.sleep(1.0)
