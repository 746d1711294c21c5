"""Running a service built by its composition root (`services/<name>/app.py: build`) inside a test.

    async with running(build(settings, bus=bus, store=engine, kube=api, clock=SystemClock())):
        ...  # the service is ready here

The service runs on the test's loop until the block ends, then is cancelled and stopped as its
`run` would stop it (consumers first, then its leases given up).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Protocol

from shared.runtime import Health
from tests.waiting import until


class Built(Protocol):
    async def run(self, health: Health) -> None: ...

    async def stop(self) -> None: ...


@asynccontextmanager
async def running(service: Built, *, within: float = 30.0) -> AsyncIterator[Health]:
    health = Health()
    task = asyncio.create_task(service.run(health))
    try:
        await until(lambda: health.ready or task.done(), "the service ready", within=within)
        if task.done():
            task.result()  # it failed to start: say why
        yield health
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await service.stop()
