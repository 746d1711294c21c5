"""Composition root of the watcher: one `KindWatcher` per watched kind over one API client and bus,
and a readiness report that says which kind's watch keeps breaking."""

from __future__ import annotations

import asyncio

from services.watcher.settings import WatcherSettings
from services.watcher.watched_kinds import WATCHED
from services.watcher.watching import KindWatcher
from shared.bus.nats import Bus
from shared.kube.client import make_api_client
from shared.runtime import Health

# Relists in a row that must fail before the watcher reports itself not ready (one failure is
# a normal event: a 410 Gone, a restarted API server).
BROKEN_AFTER = 3


async def run(settings: WatcherSettings, health: Health) -> None:
    bus = await Bus.connect(settings.nats, name="phalanx-watcher")
    api = await make_api_client(settings.kubeconfig)
    try:
        await bus.ensure_streams()
        watchers = [
            KindWatcher(
                api,
                bus,
                kind,
                scheduler_names=settings.scheduler_names,
                watch_timeout=settings.watch_timeout_seconds,
            )
            for kind in WATCHED
        ]
        tasks = [asyncio.create_task(w.run()) for w in watchers]
        await asyncio.gather(*(w.synced.wait() for w in watchers))
        health.set_ready("listed every kind")
        tasks.append(asyncio.create_task(_report_readiness(watchers, health)))
        await asyncio.gather(*tasks)
    finally:
        await api.close()
        await bus.close()


async def _report_readiness(watchers: list[KindWatcher], health: Health) -> None:
    """Not ready, with the reason, while a kind's watch keeps breaking: nothing of that kind
    reaches the consumers then, and an operator must hear of it."""
    while True:
        broken = [w for w in watchers if w.failures >= BROKEN_AFTER]
        if broken:
            health.set_not_ready(
                "; ".join(
                    f"{w.kind} watch failed {w.failures} times in a row: {w.last_error}" for w in broken
                )
            )
        elif not health.ready:
            health.set_ready("listed every kind")
        await asyncio.sleep(1.0)
