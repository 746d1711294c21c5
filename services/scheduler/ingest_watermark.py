"""Shell: how far the scheduler's ingest has caught up with the cluster, by the database's clock.

The cycle plans on what ingest has written to PostgreSQL. After a restart, a takeover or a burst
of events, those tables lag the cluster; a cycle that plans on them anyway sees bound pods as
pending and their nodes as free. Two decisions rest on this watermark (cycle_loop.py):

- a scheduler that has just become leader does not cycle until ingest has caught up with
  everything published before it became leader;
- an unconfirmed decision keeps counting as allocated until ingest has caught up past its
  time-to-live, so a bind carried out late but not yet ingested is never booked twice.

Each `probe` reads the database's clock, then the CLUSTER stream's last sequence, then the ingest
consumer's progress. When the consumer has nothing pending and nothing unacknowledged, ingest has
caught up as of the probe's time; otherwise the probe is kept, and it is caught up as of that
time once the consumer's acknowledgement floor passes the sequence the probe saw.
"""

from __future__ import annotations

from collections import deque
from datetime import datetime

import structlog
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shared.bus.ports import Bus

log = structlog.get_logger()
KEPT_PROBES = 3600  # past that, the oldest are dropped: the watermark only gets more cautious


class IngestWatermark:
    def __init__(
        self,
        bus: Bus,
        sessions: async_sessionmaker[AsyncSession],
        *,
        stream: str,
        durable: str,
    ) -> None:
        self._bus = bus
        self._sessions = sessions
        self._stream = stream
        self._durable = durable
        self._probes: deque[tuple[datetime, int]] = deque()
        self.caught_up_as_of: datetime | None = None

    async def probe(self) -> datetime:
        """Take a probe; returns its time (the database's clock). Updates `caught_up_as_of`."""
        async with self._sessions() as session:
            at: datetime = (await session.execute(select(func.clock_timestamp()))).scalar_one()
        try:
            position = await self._bus.position(self._stream, self._durable)
        except Exception as error:  # no consumer yet (ingest not started), NATS away: not caught up
            log.info("ingest progress unknown", error=f"{type(error).__name__}: {error}")
            return at
        if not position.pending and not position.ack_pending:
            self._probes.clear()
            self._advance(at)
            return at
        self._probes.append((at, position.last_sequence))
        floor = position.ack_floor
        while self._probes and floor >= self._probes[0][1]:
            self._advance(self._probes.popleft()[0])
        while len(self._probes) > KEPT_PROBES:
            self._probes.popleft()
        return at

    def _advance(self, at: datetime) -> None:
        if self.caught_up_as_of is None or at > self.caught_up_as_of:
            self.caught_up_as_of = at
