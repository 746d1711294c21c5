"""Shell: the controller's fence against decisions from a deposed scheduler leader.

Every decision carries the epoch of the leader that made it (services/scheduler/leadership.py).
Before carrying one out, the controller records that epoch as the newest acted on for the gang
(`gang_fences`); a decision older than one already acted on is stale and is ignored, so a
scheduler that lost its lease cannot undo what its successor decided. Decisions handled together
are fenced in one statement (shared/batching.py).
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shared.batching import Batcher

_FENCE_MANY = text(
    "INSERT INTO gang_fences (gang_uid, epoch) "
    "SELECT * FROM unnest(CAST(:gangs AS varchar[]), CAST(:epochs AS bigint[])) "
    "ON CONFLICT (gang_uid) DO UPDATE SET epoch = GREATEST(gang_fences.epoch, EXCLUDED.epoch) "
    "RETURNING gang_uid, epoch"
)


class DecisionFences:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions
        self._batches = Batcher(self._fence_many)

    async def fresh(self, gang_uid: str, epoch: int) -> bool:
        """Record `epoch` as the newest acted on for the gang; False if a newer one already was."""
        return await self._batches.submit((gang_uid, epoch))

    async def _fence_many(self, decisions: list[tuple[str, int]]) -> list[bool]:
        # A gang may come twice in one batch; one row per gang, with the newest epoch asked for.
        newest_asked: dict[str, int] = {}
        for gang_uid, epoch in decisions:
            newest_asked[gang_uid] = max(epoch, newest_asked.get(gang_uid, epoch))
        async with self._sessions() as session, session.begin():
            rows = await session.execute(
                _FENCE_MANY, {"gangs": list(newest_asked), "epochs": list(newest_asked.values())}
            )
            newest = {gang_uid: int(epoch) for gang_uid, epoch in rows}
        return [newest[gang_uid] <= epoch for gang_uid, epoch in decisions]
