"""Shell: the work queue every simulated control-plane controller reconciles from.

A controller marks keys dirty from the store's watch callbacks; the queue reconciles each dirty key
once per pass, one at a time on the running event loop, as client-go's work queue hands a key to
one worker: a key marked again while it is being reconciled is reconciled again afterwards. A
refused write (ApiError) requeues the key after `retry_delay` seconds, as a real controller
requeues with backoff; any other failure is logged and the key dropped, so one controller's bug
does not stop the others. `settle` (tests) waits until no key is due.

The stand-ins (standin.py) key by owner object; the PersistentVolume binder and the resourceclaim
controller look at the whole store on each pass, so their queue holds one key (`Resync`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

from services.simulator.store.errors import ApiError

log = logging.getLogger(__name__)

Key = TypeVar("Key", bound=Hashable)


class WorkQueue(Generic[Key]):
    """Dirty keys, reconciled in the order they were first marked, one at a time."""

    def __init__(
        self,
        reconcile: Callable[[Key], Awaitable[None]],
        describe: Callable[[Key], str],
        *,
        retry_delay: float = 1.0,
        loop: Callable[[], asyncio.AbstractEventLoop] = asyncio.get_running_loop,
    ) -> None:
        self._reconcile, self._describe = reconcile, describe
        self._retry_delay, self._loop = retry_delay, loop
        self._dirty: dict[Key, None] = {}  # a dict keeps the order keys were marked in
        self._task: asyncio.Task[None] | None = None

    def mark(self, key: Key) -> None:
        self._dirty[key] = None
        if self._task is None or self._task.done():
            try:
                loop = self._loop()
            except RuntimeError:  # no loop running (a synchronous unit test): `settle` drains
                return
            self._task = loop.create_task(self._drain())

    async def settle(self) -> None:
        """Reconcile until nothing is dirty (tests; the server drains on its own)."""
        while self._dirty or (self._task is not None and not self._task.done()):
            if self._task is not None and not self._task.done():
                await self._task
            else:
                await self._drain()

    async def _drain(self) -> None:
        while self._dirty:
            key = next(iter(self._dirty))
            del self._dirty[key]
            try:
                await self._reconcile(key)
            except ApiError as error:
                log.info("%s: %s; retrying", self._describe(key), error)
                self._loop().call_later(self._retry_delay, self.mark, key)
            except Exception:  # a controller's bug must not stop every other controller
                log.exception("%s failed", self._describe(key))


class Resync:
    """A controller that reconciles everything at once: `mark` asks for another pass over the
    whole store, and subclasses say what a pass does in `reconcile`."""

    def __init__(
        self,
        name: str,
        *,
        retry_delay: float = 1.0,
        loop: Callable[[], asyncio.AbstractEventLoop] = asyncio.get_running_loop,
    ) -> None:
        self._passes: WorkQueue[None] = WorkQueue(
            lambda _: self.reconcile(), lambda _: name, retry_delay=retry_delay, loop=loop
        )

    async def reconcile(self) -> None:
        raise NotImplementedError

    def mark(self) -> None:
        self._passes.mark(None)

    async def settle(self) -> None:
        await self._passes.settle()
