"""Group commit for a service's small writes: many callers, one round of I/O.

A consumer handles messages concurrently, and each may need a tiny write (a fence row, an audit
row in the outbox). One transaction each costs more than the row. A `Batcher` hands every caller
its own awaitable result while the writes that arrive together share one flush: the first
caller starts a flush on the next turn of the event loop, and whatever arrives while it runs
goes in the next one. Idle, it adds no delay; busy, batches grow with the load.

A flush that raises fails every caller in its batch, each of which handles it as it would its
own failed write (a consumer naks its message and it comes back).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


class Batcher(Generic[Item, Result]):
    def __init__(
        self, flush: Callable[[list[Item]], Awaitable[Sequence[Result]]], *, max_batch: int = 512
    ) -> None:
        """`flush(items)` writes the items together and returns one result per item, in order."""
        self._flush = flush
        self._max_batch = max_batch
        self._waiting: list[tuple[Item, asyncio.Future[Result]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def submit(self, item: Item) -> Result:
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, future))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._waiting:
            batch = self._waiting[: self._max_batch]
            del self._waiting[: self._max_batch]
            try:
                results = await self._flush([item for item, _ in batch])
                if len(results) != len(batch):
                    raise RuntimeError(f"flush returned {len(results)} results for {len(batch)} items")
            except Exception as error:  # every caller sees its write fail, as if alone
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
                continue
            for (_, future), result in zip(batch, results, strict=True):
                if not future.done():  # a caller that was cancelled no longer waits
                    future.set_result(result)
