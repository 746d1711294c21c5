"""The audit stream as the console sees it: recent events kept for timelines, new ones fanned out live.

One ephemeral ordered consumer on AUDIT as the read-only `auditor` user (nothing is left on the
server), starting `history` back. Each browser's server-sent-event stream is a bounded queue; a
browser that falls behind loses events rather than slowing the others (it re-reads the page anyway).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import nats
import orjson
import structlog
from nats.js.api import ConsumerConfig, DeliverPolicy

from shared.bus.credentials import connect_options
from shared.config import NatsSettings
from shared.messages import subjects

log = structlog.get_logger()


class AuditFeed:
    def __init__(self, settings: NatsSettings, *, history: timedelta, keep: int) -> None:
        self.settings = settings
        self.history = history
        self.events: deque[dict[str, Any]] = deque(maxlen=keep)
        self.listeners: set[asyncio.Queue[dict[str, Any]]] = set()
        self.connected = asyncio.Event()

    async def run(self) -> None:
        """Read the stream until cancelled; an ordered consumer recreates itself after a gap."""
        connection = await nats.connect(**connect_options(self.settings), name="phalanx-console")
        try:
            js = connection.jetstream()
            config = ConsumerConfig(
                deliver_policy=DeliverPolicy.BY_START_TIME,
                opt_start_time=datetime.now(UTC) - self.history,
            )
            subscription = await js.subscribe(
                subjects.STREAM_SUBJECTS[subjects.AUDIT_STREAM], ordered_consumer=True, config=config
            )
            self.connected.set()
            while True:
                try:
                    message = await subscription.next_msg(timeout=3600)
                except (TimeoutError, nats.errors.TimeoutError):
                    continue
                with contextlib.suppress(orjson.JSONDecodeError):
                    self.publish(orjson.loads(message.data))
        finally:
            await connection.close()

    def publish(self, document: dict[str, Any]) -> None:
        self.events.append(document)
        for listener in list(self.listeners):
            with contextlib.suppress(asyncio.QueueFull):
                listener.put_nowait(document)

    def listen(self) -> asyncio.Queue[dict[str, Any]]:
        listener: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=256)
        self.listeners.add(listener)
        return listener

    def forget(self, listener: asyncio.Queue[dict[str, Any]]) -> None:
        self.listeners.discard(listener)

    def timeline(self, namespace: str, job: str, podgroup: str) -> list[dict[str, Any]]:
        """The events about a Job, its PodGroup and its pods (`<job>-<task>-<index>`), oldest first."""
        return list(_about(self.events, namespace, job, podgroup))


def _about(
    events: deque[dict[str, Any]], namespace: str, job: str, podgroup: str
) -> Iterator[dict[str, Any]]:
    for document in events:
        data = document.get("data")
        if not isinstance(data, dict) or data.get("namespace") != namespace:
            continue
        name = str(data.get("name") or "")
        if name in (job, podgroup) or (data.get("kind") == "Pod" and name.startswith(f"{job}-")):
            yield document
