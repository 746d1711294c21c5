"""Shell: whether a decision comes from the scheduler that leads now, in time to be carried out.

Before the controller binds, evicts or admits anything for a decision (gangs.py), it reads the
scheduler's lease row (`scheduler_leader`, read-only here: the scheduler is its one writer) and
the database's clock. A decision is carried out only when its epoch is the current leader's and
its `valid_until` (set by the scheduler from the same database clock) has not passed:

- an older epoch is a deposed leader's decision, or one heard late: refused (stale-epoch);
- a newer epoch than the lease row names cannot come from any scheduler: it is forged, and is
  refused before it reaches the gang fences, which it would otherwise poison (forged-epoch);
- a decision past its `valid_until` may no longer be counted by the scheduler, whose snapshot
  drops an unconfirmed decision after its time-to-live: carrying it out could book twice
  (expired).

Checks that arrive together share one query (shared/batching.py).

A decision's binds may wait for a free bind slot after the check passed, so the first bind of a
gang's decision asks again (`expired`) just before it is sent; once one is sent the decision has
begun and its other binds are sent however late (gangs.py), since the scheduler keeps counting a
begun decision's binds. Only expiry yields to "begun"; an epoch refusal never does. The check is
against the database clock as last read: the local clock plus the offset of the last query,
measured from before the query was sent, so that the estimate of the database's time errs late
and no decision begins after it ran out.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shared.batching import Batcher

_LEADER = text("SELECT epoch, now() FROM scheduler_leader WHERE id = 1")


class LeaderCheck:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions
        self._batches = Batcher(self._check_many)
        self._clock_offset: timedelta | None = None  # database clock minus ours, erring late

    async def refusal(self, epoch: int, valid_until: datetime | None) -> tuple[str, str] | None:
        """None when the decision may be carried out, else (reason, message) for the audit."""
        return await self._batches.submit((epoch, valid_until))

    def expired(self, valid_until: datetime | None) -> bool:
        """Whether a decision checked earlier has run out by now (by the database's clock)."""
        if valid_until is None or self._clock_offset is None:
            return False
        return datetime.now(UTC) + self._clock_offset > valid_until

    async def _check_many(self, decisions: list[tuple[int, datetime | None]]) -> list[tuple[str, str] | None]:
        asked_at = datetime.now(UTC)
        async with self._sessions() as session:
            row = (await session.execute(_LEADER)).first()
        if row is None:
            return [("no-leader", "no scheduler has ever led")] * len(decisions)
        leading, now = int(row[0]), row[1]
        self._clock_offset = now - asked_at
        return [_refusal(epoch, valid_until, leading, now) for epoch, valid_until in decisions]


def _refusal(epoch: int, valid_until: datetime | None, leading: int, now: datetime) -> tuple[str, str] | None:
    if epoch < leading:
        return ("stale-epoch", f"decided in epoch {epoch}; the scheduler leading now has epoch {leading}")
    if epoch > leading:
        return ("forged-epoch", f"epoch {epoch} is newer than the leading scheduler's epoch {leading}")
    # A decision of a scheduler from before valid_until existed has none: its epoch is the check.
    if valid_until is not None and now > valid_until:
        return ("expired", f"to be carried out by {valid_until.isoformat()}; it is {now.isoformat()}")
    return None
