"""Shell: the rows one scheduling cycle writes, inside the fenced transaction cycle_loop.py opens.

`expire` is the one place a pending decision stops counting (decision_expiry.py says which);
`write_records` inserts the plan's decisions and keeps the gang verdicts, as the pure
core/cycle_records.py translated them. The outbox messages go through the loop's unit of work.
"""

from __future__ import annotations

from sqlalchemy import delete, insert, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.scheduler.core.cycle_records import CycleRecords
from services.scheduler.decision_expiry import DecisionExpiry, still_counts
from shared.storage import tables


async def expire(session: AsyncSession, expire_before: DecisionExpiry | None) -> None:
    """The one place a decision stops counting: the snapshot just read left these out."""
    if expire_before is not None:
        await session.execute(
            update(tables.Decision)
            .where(tables.Decision.state == "pending", ~still_counts(expire_before))
            .values(state="expired")
        )


async def write_records(session: AsyncSession, records: CycleRecords) -> None:
    """The decisions inserted, the placed gangs' verdicts deleted, the others upserted."""
    if records.decisions:
        await session.execute(insert(tables.Decision), records.decisions)
    if records.placed_gang_uids:
        await session.execute(
            delete(tables.GangVerdictRow).where(tables.GangVerdictRow.gang_uid.in_(records.placed_gang_uids))
        )
    if records.verdicts:
        statement = pg_insert(tables.GangVerdictRow).values(records.verdicts)
        statement = statement.on_conflict_do_update(
            index_elements=["gang_uid"],
            set_={
                c: statement.excluded[c]
                for c in ("namespace", "name", "queue", "reason", "condition_reason", "message", "cycle")
            },
        )
        await session.execute(statement)
