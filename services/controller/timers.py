"""Shell: the controller's job timers in PostgreSQL (`job_timers`), so a restart loses no deadline.

The pure lifecycle asks for timers with `ScheduleTimer` and `CancelTimer` effects (a policy's delayed
action, keyed by the pod that raised it, or the job's ttlSecondsAfterFinished). `JobDriver` writes
those here before it applies a transition's other effects, and arms an in-memory handle; once a
timer has fired and its transition is applied, its row goes. At start the driver reads every row
back (`load`), gives the delayed actions to the lifecycle again and re-arms each at its deadline.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Delete, delete, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.controller.core import effects as fx
from services.controller.core.jobstate import DelayedAction
from shared.storage import tables

TimerChange = fx.ScheduleTimer | fx.CancelTimer


@dataclass(frozen=True)
class StoredTimer:
    job_uid: str
    key: str
    due: datetime
    delayed: DelayedAction | None  # None for a deadline that is not a policy's action (the TTL)


class TimerStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def apply(
        self, job_uid: str, changes: Iterable[TimerChange], delayed: Mapping[str, DelayedAction]
    ) -> None:
        """Record a transition's timer effects in their order, in one transaction."""
        async with self._sessions() as session, session.begin():
            for change in changes:
                if isinstance(change, fx.CancelTimer):
                    await session.execute(_row(job_uid, change.key))
                    continue
                action = delayed.get(change.key)
                values = {
                    "job_uid": job_uid,
                    "key": change.key,
                    "due": change.at,
                    "action": change.action,
                    "event": action.event if action else "",
                    "task": action.task if action else "",
                    "pod": action.pod if action else "",
                    "pod_uid": action.pod_uid if action else "",
                    "partition": action.partition if action else "",
                }
                statement = insert(tables.JobTimer).values(**values)
                await session.execute(
                    statement.on_conflict_do_update(
                        index_elements=["job_uid", "key"],
                        set_={k: v for k, v in values.items() if k not in ("job_uid", "key")},
                    )
                )

    async def fired(self, job_uid: str, key: str, now: datetime) -> None:
        """Drop a timer whose transition has been applied; a deadline moved later stays."""
        async with self._sessions() as session, session.begin():
            await session.execute(_row(job_uid, key).where(tables.JobTimer.due <= now))

    async def forget(self, job_uid: str) -> None:
        async with self._sessions() as session, session.begin():
            await session.execute(delete(tables.JobTimer).where(tables.JobTimer.job_uid == job_uid))

    async def load(self) -> list[StoredTimer]:
        async with self._sessions() as session:
            rows = (await session.execute(select(tables.JobTimer))).scalars().all()
        return [
            StoredTimer(
                row.job_uid,
                row.key,
                row.due,
                DelayedAction(
                    row.key, row.action, row.event, row.due, row.task, row.pod, row.pod_uid, row.partition
                )
                if row.event
                else None,
            )
            for row in rows
        ]


def _row(job_uid: str, key: str) -> Delete:
    return delete(tables.JobTimer).where(tables.JobTimer.job_uid == job_uid, tables.JobTimer.key == key)
