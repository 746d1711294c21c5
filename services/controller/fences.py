"""Shell: the controller's fence against decisions from a deposed scheduler leader.

Every decision carries the epoch of the leader that made it (services/scheduler/leadership.py)
and the cycle that made it. Before carrying one out, the controller records (epoch, cycle) as the
newest acted on for the gang (`gang_fences`); a decision older than one already acted on is stale
and is ignored: a scheduler that lost its lease cannot undo what its successor decided, and an
old decision of the same leader (replayed, or about a job since restarted) cannot undo a newer
one. Decisions handled together are fenced in one statement (shared/batching.py).
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shared.batching import Batcher

_NEWER = "(gang_fences.epoch, gang_fences.cycle) < (EXCLUDED.epoch, EXCLUDED.cycle)"
_FENCE_MANY = text(
    "INSERT INTO gang_fences (gang_uid, epoch, cycle) "
    "SELECT * FROM unnest(CAST(:gangs AS varchar[]), CAST(:epochs AS bigint[]), CAST(:cycles AS bigint[])) "
    "ON CONFLICT (gang_uid) DO UPDATE SET "
    f"  epoch = CASE WHEN {_NEWER} THEN EXCLUDED.epoch ELSE gang_fences.epoch END, "
    f"  cycle = CASE WHEN {_NEWER} THEN EXCLUDED.cycle ELSE gang_fences.cycle END "
    "RETURNING gang_uid, epoch, cycle"
)


class DecisionFences:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions
        self._batches = Batcher(self._fence_many)

    async def fresh(self, gang_uid: str, epoch: int, cycle: int = 0) -> bool:
        """Record (epoch, cycle) as the newest acted on for the gang; False if a newer one was."""
        return await self._batches.submit((gang_uid, (epoch, cycle)))

    async def _fence_many(self, decisions: list[tuple[str, tuple[int, int]]]) -> list[bool]:
        # A gang may come twice in one batch; one row per gang, with the newest decision asked for.
        newest_asked: dict[str, tuple[int, int]] = {}
        for gang_uid, made in decisions:
            newest_asked[gang_uid] = max(made, newest_asked.get(gang_uid, made))
        async with self._sessions() as session, session.begin():
            rows = await session.execute(
                _FENCE_MANY,
                {
                    "gangs": list(newest_asked),
                    "epochs": [epoch for epoch, _ in newest_asked.values()],
                    "cycles": [cycle for _, cycle in newest_asked.values()],
                },
            )
            newest = {gang_uid: (int(epoch), int(cycle)) for gang_uid, epoch, cycle in rows}
        return [newest[gang_uid] <= made for gang_uid, made in decisions]
