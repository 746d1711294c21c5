"""Composition root of the watcher: one `KindWatcher` per watched kind over one API client and bus."""

from __future__ import annotations

import asyncio

from services.watcher.kinds import WATCHED
from services.watcher.settings import WatcherSettings
from services.watcher.watching import KindWatcher
from shared.bus.nats import Bus
from shared.kube.client import make_api_client
from shared.runtime import Health


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
        await asyncio.gather(*tasks)
    finally:
        await api.close()
        await bus.close()
