"""Shell helper: do a piece of work once for a burst of requests for the same key.

The controller's status writers (a PodGroup's status, a queue's counts) read the cache when they
run, so one run after a short delay covers every change that asked for it. A request may ask
for a longer delay (a write likely to be followed by another soon) or a shorter one; a run
already due happens at the earlier of the two. A run that fails is logged and left to the next
request or the periodic resync.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

import structlog

log = structlog.get_logger()
K = TypeVar("K", bound=Hashable)


class Coalescer(Generic[K]):
    def __init__(self, delay: float, work: Callable[[K], Awaitable[None]], *, what: str) -> None:
        self._delay = delay
        self._work = work
        self._what = what
        self._due: dict[K, asyncio.TimerHandle] = {}
        self._running: set[asyncio.Task[None]] = set()

    def request(self, key: K, *, delay: float | None = None) -> None:
        """Run the work for `key` after the delay (this one's, else the default), unless a run
        for it is already due by then."""
        loop = asyncio.get_running_loop()
        wait = self._delay if delay is None else delay
        due = self._due.get(key)
        if due is not None:
            if due.when() <= loop.time() + wait:
                return
            due.cancel()  # this request wants it sooner
        self._due[key] = loop.call_later(wait, self._start, key)

    def _start(self, key: K) -> None:
        self._due.pop(key, None)
        task = asyncio.get_running_loop().create_task(self._run(key))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _run(self, key: K) -> None:
        try:
            await self._work(key)
        except Exception as error:
            log.warning(f"{self._what} failed", key=str(key), error=repr(error))
