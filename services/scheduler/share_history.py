"""Shell: keep each queue's share over the last hours, for the console's chart (issue #19).

The cycle loop sets the queues' figures on every committed cycle (`latest_queue_figures`); this
task, beside it in the leading scheduler, writes them to `queue_share_history` once when the first
figures come and then every `every_seconds`, and in the same transaction deletes the rows older
than `keep_hours`. The table stays bounded: queues * keep_hours * 3600 / every_seconds rows.
A standby's figures are not fresh (it runs no cycle), so it writes nothing; a leader that loses
the lease stops writing when its figures age past `every_seconds`.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import structlog
from sqlalchemy import delete, insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.scheduler.metrics import latest_queue_figures
from shared.storage import tables

log = structlog.get_logger()


class ShareHistory:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        every_seconds: float,
        keep_hours: float,
    ) -> None:
        self._sessions = sessions
        self._every = every_seconds
        self._keep = timedelta(hours=keep_hours)

    async def run(self) -> None:
        while True:
            try:
                wrote = await self.sample_once()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the database is away: try again at the next sample
                log.warning("queue share not sampled", error=str(error))
                wrote = False
            # Until the first figures come, look again soon: the chart starts with the stack.
            await asyncio.sleep(self._every if wrote else min(self._every, 1.0))

    async def sample_once(self) -> bool:
        """Write the latest figures if they are fresh; True when a sample was written."""
        figures, at = latest_queue_figures()
        if not figures or time.monotonic() - at > max(self._every, 5.0):
            return False
        now = datetime.now(UTC)
        table = tables.QueueShareSample
        async with self._sessions() as session, session.begin():
            await session.execute(
                insert(table), [{"queue": f.name, "sampled_at": now, "share": f.share} for f in figures]
            )
            await session.execute(delete(table).where(table.sampled_at < now - self._keep))
        return True
