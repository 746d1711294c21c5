"""Shell: the `queue_usage` table — each queue's decayed usage for the fairshare plugin.

Kept only while `fairshare` is configured (docs/fairness.md). The cycle loop calls `prepare` after
reading a snapshot: on the first cycle of a leadership term it reads the table whole (what the
previous leader last wrote), later it uses what the last committed cycle computed; either way it
lays the usage onto the snapshot, and the core advances it to the cycle's `now` (core/fairshare.py).
`due` says whether the plan's usage should be written in this cycle's fenced transaction: at most
every `every_seconds`, since a leader that starts from an older row advances it over the gap with
the allocation it sees, so writing every cycle would buy nothing; `committed` keeps it in memory.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.scheduler.core.snapshot import QueueUsage, Snapshot
from shared.storage import tables


class UsageBook:
    def __init__(self, every_seconds: float = 15.0) -> None:
        self.current: QueueUsage | None = None
        self._every = every_seconds
        self._written: datetime | None = None
        self._epoch: int | None = None

    async def prepare(
        self, sessions: async_sessionmaker[AsyncSession], snapshot: Snapshot, epoch: int | None
    ) -> Snapshot:
        if self._epoch != epoch or epoch is None:
            async with sessions() as session, session.begin():
                self.current = await load(session)
            self._written = self.current.at if self.current is not None else None
            self._epoch = epoch
        return replace(snapshot, queue_usage=self.current)

    def due(self, usage: QueueUsage | None) -> QueueUsage | None:
        """The usage to write in this cycle's commit, or None when it is not yet due."""
        if usage is None:
            return None
        if self._written is not None and (usage.at - self._written).total_seconds() < self._every:
            return None
        return usage

    def committed(self, usage: QueueUsage | None, written: bool) -> None:
        if usage is not None:
            self.current = usage
            if written:
                self._written = usage.at


async def load(session: AsyncSession) -> QueueUsage | None:
    """What the table holds, as of its oldest row (rows are written together)."""
    row = tables.QueueUsageRow
    rows = (await session.execute(select(row.queue, row.usage, row.updated_at))).all()
    if not rows:
        return None
    usage = {queue: {str(k): float(v) for k, v in values.items()} for queue, values, _ in rows}
    return QueueUsage(at=min(at for _, _, at in rows), usage=usage)


async def write(session: AsyncSession, usage: QueueUsage) -> None:
    """Replace the table's content with `usage` (inside the caller's fenced transaction)."""
    row = tables.QueueUsageRow
    if usage.usage:
        statement = pg_insert(row).values(
            [{"queue": q, "usage": dict(v), "updated_at": usage.at} for q, v in usage.usage.items()]
        )
        await session.execute(
            statement.on_conflict_do_update(
                index_elements=["queue"],
                set_={"usage": statement.excluded.usage, "updated_at": statement.excluded.updated_at},
            )
        )
    await session.execute(delete(row).where(row.queue.not_in(list(usage.usage))))
