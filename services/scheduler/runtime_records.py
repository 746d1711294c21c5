"""Shell: the `runtime_records` table — each gang's estimate when it started, its actual runtime
when it ended — and the history learned estimates come from (core/estimates.py).

Kept only while reservation backfill is configured (docs/backfill.md). The cycle loop calls
`prepare` after reading a snapshot: on the first cycle of a leadership term it reads the open runs
of the snapshot's gangs and the last 20 successful runtimes per queue and job class; later, it reads
how the open runs whose gangs left the snapshot ended (a Completed PodGroup leaves the cycle's
mirror); and it lays the history onto the snapshot. `write` adds what the pure `runs_changed` found
in the cycle's fenced transaction; `committed` updates the memory once that transaction is in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.scheduler.core.estimates import (
    LEARN_FROM_LAST,
    RunEnded,
    RunStarted,
    history_key,
    runs_changed,
)
from services.scheduler.core.snapshot import FAILED, SUCCEEDED, Snapshot
from shared.storage import tables

Runs = tuple[list[RunStarted], list[RunEnded]]


class RuntimeRecords:
    def __init__(self) -> None:
        self.started: dict[str, datetime] = {}
        self.ended: set[str] = set()
        self.history: dict[str, list[float]] = {}
        self._epoch: int | None = None
        self._vanished: list[RunEnded] = []  # open runs whose gang left the snapshot this cycle

    async def prepare(
        self, sessions: async_sessionmaker[AsyncSession], snapshot: Snapshot, epoch: int | None
    ) -> Snapshot:
        present = {g.uid for g in snapshot.gangs}
        self._vanished = []
        if self._epoch != epoch or epoch is None:
            async with sessions() as session, session.begin():
                await self._load(session, [g.uid for g in snapshot.gangs])
            self._epoch = epoch
        elif gone := [uid for uid in self.started if uid not in present and uid not in self.ended]:
            async with sessions() as session, session.begin():
                self._vanished = await self._ended_elsewhere(session, gone, snapshot.now)
        for uid in [uid for uid in self.started if uid not in present and uid in self.ended]:
            del self.started[uid]  # ended and gone: nothing more to record
            self.ended.discard(uid)
        return replace(snapshot, runtime_history={k: tuple(v) for k, v in self.history.items()})

    def changes(self, snapshot: Snapshot) -> Runs:
        starts, ends = runs_changed(snapshot, self.started, self.ended)
        return starts, ends + self._vanished

    async def write(self, session: AsyncSession, runs: Runs) -> None:
        starts, ends = runs
        record = tables.RuntimeRecord
        if starts:
            rows = [
                {
                    "gang_uid": s.gang_uid,
                    "namespace": s.namespace,
                    "name": s.name,
                    "queue": s.queue,
                    "job_class": s.job_class,
                    "estimate_seconds": s.estimate.seconds,
                    "estimate_source": s.estimate.source,
                    "started_at": s.started_at,
                }
                for s in starts
            ]
            await session.execute(pg_insert(record).values(rows).on_conflict_do_nothing())
        for end in ends:
            await session.execute(
                update(record)
                .where(record.gang_uid == end.gang_uid, record.finished_at.is_(None))
                .values(finished_at=end.finished_at, actual_seconds=end.seconds, outcome=end.outcome)
            )

    def committed(self, runs: Runs) -> None:
        starts, ends = runs
        self.started.update({s.gang_uid: s.started_at for s in starts})
        for end in ends:
            self.ended.add(end.gang_uid)
            if end.outcome == SUCCEEDED and end.history_key is not None:
                kept = self.history.setdefault(end.history_key, [])
                kept.append(end.seconds)
                del kept[:-LEARN_FROM_LAST]

    async def _ended_elsewhere(
        self, session: AsyncSession, uids: Sequence[str], now: datetime
    ) -> list[RunEnded]:
        """Open runs whose gang left the snapshot: a Completed (or deleted) PodGroup leaves the
        cycle's mirror (mirror.py), so how it ended is read here, from its row and its pods' rows:
        Succeeded when the PodGroup completed or every pod succeeded, Failed when one failed, else
        Ended (deleted while it ran; not learned from)."""
        group, record, pod = tables.PodGroup, tables.RuntimeRecord, tables.Pod
        rows = await session.execute(
            select(record.gang_uid, record.queue, record.job_class, record.started_at, group.phase, pod.phase)
            .join(group, group.uid == record.gang_uid, isouter=True)
            .join(pod, (pod.namespace == group.namespace) & (pod.group_name == group.name), isouter=True)
            .where(record.gang_uid.in_(uids))
        )
        seen: dict[str, tuple[str, str | None, datetime, set[str]]] = {}
        for uid, queue, klass, started_at, group_phase, pod_phase in rows:
            _, _, _, phases = seen.setdefault(uid, (queue, klass, started_at, set()))
            phases.add("Completed" if group_phase == "Completed" else str(pod_phase))
        ended = []
        for uid, (queue, klass, started_at, phases) in seen.items():
            if "Completed" in phases or phases == {SUCCEEDED}:
                outcome = SUCCEEDED
            else:
                outcome = FAILED if FAILED in phases else "Ended"
            key = history_key(queue, klass) if klass is not None else None
            ended.append(RunEnded(uid, key, now, max(0.0, (now - started_at).total_seconds()), outcome))
        return ended

    async def _load(self, session: AsyncSession, uids: Sequence[str]) -> None:
        record = tables.RuntimeRecord
        self.started, self.ended, self.history = {}, set(), {}
        if uids:
            rows = await session.execute(
                select(record.gang_uid, record.started_at, record.finished_at).where(
                    record.gang_uid.in_(uids)
                )
            )
            for uid, started_at, finished_at in rows:
                self.started[uid] = started_at
                if finished_at is not None:
                    self.ended.add(uid)
        rank = (
            func.row_number()
            .over(partition_by=(record.queue, record.job_class), order_by=record.finished_at.desc())
            .label("rank")
        )
        recent = (
            select(record.queue, record.job_class, record.actual_seconds, record.finished_at, rank)
            .where(
                record.outcome == SUCCEEDED, record.job_class.is_not(None), record.actual_seconds.is_not(None)
            )
            .subquery()
        )
        rows_: Any = await session.execute(
            select(recent.c.queue, recent.c.job_class, recent.c.actual_seconds)
            .where(recent.c.rank <= LEARN_FROM_LAST)
            .order_by(recent.c.finished_at)
        )
        for queue, klass, seconds in rows_:
            self.history.setdefault(history_key(queue, klass), []).append(seconds)
