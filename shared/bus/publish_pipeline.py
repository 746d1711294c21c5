"""A JetStream publisher that does not wait for each ack, used by the watcher's relists and events.

`Bus.pipeline()` (nats.py) hands one out. Messages go out in call order with `Nats-Msg-Id` set,
so JetStream drops a duplicate; acks are checked as they arrive and `drain` waits for the rest,
each within a deadline of its own, so a server that dies between taking a message and acking it
cannot stall the publisher for ever.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from nats.js import JetStreamContext

from shared.bus.delivery import MSG_ID

ACK_TIMEOUT_SECONDS = 10.0  # a JetStream request's answer, an ack among them


class Pipeline:
    """Publishes without waiting for each ack: messages go out in call order, acks are checked as
    they arrive, and `drain` waits for the rest. A failed ack raises on the next call, and so does
    an ack overdue by `ack_timeout`: NATS killed between taking a message and acking it never
    answers, and the client's ack future has no deadline of its own. Without one, `drain` waited
    forever and the watcher's kind published nothing again (T9 found it)."""

    def __init__(self, js: JetStreamContext, *, ack_timeout: float = ACK_TIMEOUT_SECONDS) -> None:
        self._js = js
        self._ack_timeout = ack_timeout
        self._inflight: list[tuple[float, asyncio.Future[Any]]] = []  # (sent at, its ack), in order

    async def send(self, subject: str, payload: bytes, msg_id: str) -> None:
        self.check()
        future = await self._js.publish_async(subject, payload, headers={MSG_ID: msg_id})
        self._inflight.append((time.monotonic(), future))
        if len(self._inflight) >= 512:
            self._reap()

    def check(self) -> None:
        """Raise if an ack failed or is overdue; cheap enough to call for every line of a watch."""
        if self._inflight and (self._inflight[0][1].done() or self._overdue(self._inflight[0][0])):
            self._reap()

    def _overdue(self, sent_at: float) -> bool:
        return time.monotonic() - sent_at > self._ack_timeout

    def _reap(self) -> None:
        still: list[tuple[float, asyncio.Future[Any]]] = []
        for sent_at, future in self._inflight:
            if not future.done():
                if self._overdue(sent_at):
                    self._abandon()
                    raise TimeoutError(f"no ack from JetStream within {self._ack_timeout:g} s")
                still.append((sent_at, future))
            elif future.exception() is not None:
                self._abandon()
                raise future.exception()  # type: ignore[misc]
        self._inflight = still

    async def drain(self) -> None:
        inflight, self._inflight = self._inflight, []
        futures = [future for _, future in inflight]
        if not futures:
            return
        oldest = inflight[0][0]
        wait = max(0.0, oldest + self._ack_timeout - time.monotonic())
        _, pending = await asyncio.wait(futures, timeout=wait)
        for future in pending:
            future.cancel()
        if pending:
            raise TimeoutError(f"{len(pending)} acks from JetStream not within {self._ack_timeout:g} s")
        for future in futures:
            if future.exception() is not None:
                raise future.exception()  # type: ignore[misc]

    def _abandon(self) -> None:
        """Give up on every ack still awaited (the caller starts over: a relist republishes)."""
        for _, future in self._inflight:
            future.cancel()
        self._inflight = []
