"""The transactional outbox: write a row and its consequence's message in one transaction.

A service that changes its tables and must tell the others calls `enqueue` inside the same
transaction; `OutboxRelay` then publishes the rows in id order with `Nats-Msg-Id` set, and marks
them published. A crash between publish and mark republishes the rows on restart, which JetStream's
duplicate window and the consumers' idempotency absorb. Rows are claimed `FOR UPDATE SKIP LOCKED`,
so replicas can relay side by side.

The relay also measures, about once a second whatever its passes do, how many committed rows wait
and how old the oldest is (`phalanx_outbox_depth`, `phalanx_outbox_oldest_age_seconds`): a relay
that cannot publish shows as a growing age, which the stuck-outbox alert watches.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import structlog
from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.sql import func

from shared import failpoints
from shared.bus.ports import Bus
from shared.messages.envelope import CloudEvent
from shared.metrics import OUTBOX_DEPTH, OUTBOX_OLDEST_AGE, OUTBOX_PUBLISHED
from shared.storage.tables import _Outbox

log = structlog.get_logger()


def enqueue(session: AsyncSession, table: type[_Outbox], subject: str, event: CloudEvent[Any]) -> None:
    """Add `event` to the outbox in `session`'s transaction (published after it commits)."""
    session.add(table(subject=subject, msg_id=event.id, payload=event.to_bytes()))  # type: ignore[call-arg]


def enqueue_many(
    session: AsyncSession, table: type[_Outbox], items: list[tuple[str, CloudEvent[Any]]]
) -> None:
    session.add_all(
        [table(subject=s, msg_id=e.id, payload=e.to_bytes()) for s, e in items]  # type: ignore[call-arg]
    )


class OutboxRelay:
    """Publishes committed outbox rows; `kick()` after a commit publishes them at once."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        table: type[_Outbox],
        bus: Bus,
        *,
        batch: int = 1000,
        poll_seconds: float = 0.5,
        keep_seconds: float = 3600,
        measure_seconds: float = 1.0,
    ) -> None:
        self._sessions = sessions
        self._table = table
        self._name = str(getattr(table, "__tablename__", table.__name__))  # the metrics' label
        self._bus = bus
        self._batch = batch
        self._poll = poll_seconds
        self._keep = keep_seconds
        self._measure_every = measure_seconds
        self._measured_at = float("-inf")
        self._wake = asyncio.Event()
        self.published = 0

    def kick(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        passes = 0
        while True:
            try:
                moved = await self.relay_once()
                passes += 1
                if passes % 600 == 0:
                    await self._prune()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("outbox relay failed; retrying", error=str(error))
                moved = 0
                await asyncio.sleep(1.0)
            await self._measure_now_and_then()
            if moved < self._batch:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._poll)
                self._wake.clear()

    async def relay_once(self) -> int:
        table = self._table
        async with self._sessions() as session, session.begin():
            rows = (
                await session.execute(
                    select(table.id, table.subject, table.payload, table.msg_id)
                    .where(table.published_at.is_(None))
                    .order_by(table.id)
                    .limit(self._batch)
                    .with_for_update(skip_locked=True)
                )
            ).all()
            if not rows:
                return 0
            await self._bus.publish_many([(r.subject, r.payload, r.msg_id) for r in rows])
            await failpoints.hit("relay.after_publish_before_mark")
            await session.execute(
                update(table).where(table.id.in_([r.id for r in rows])).values(published_at=func.now())
            )
        self.published += len(rows)
        OUTBOX_PUBLISHED.labels(self._name).inc(len(rows))
        return len(rows)

    async def _measure_now_and_then(self) -> None:
        if time.monotonic() - self._measured_at < self._measure_every:
            return
        self._measured_at = time.monotonic()
        try:
            await self.measure()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the database is away: the relay's own retry says so
            log.debug("outbox not measured", error=str(error))

    async def measure(self) -> tuple[int, float]:
        """Count the committed rows not yet published and the oldest one's age; set the gauges."""
        table = self._table
        async with self._sessions() as session:
            depth, age = (
                await session.execute(
                    select(
                        func.count(table.id),
                        func.coalesce(func.extract("epoch", func.now() - func.min(table.created_at)), 0),
                    ).where(table.published_at.is_(None))
                )
            ).one()
        OUTBOX_DEPTH.labels(self._name).set(depth)
        OUTBOX_OLDEST_AGE.labels(self._name).set(float(age))
        return int(depth), float(age)

    async def _prune(self) -> None:
        table = self._table
        async with self._sessions() as session, session.begin():
            await session.execute(
                delete(table).where(
                    table.published_at < func.now() - func.make_interval(0, 0, 0, 0, 0, 0, self._keep)
                )
            )
