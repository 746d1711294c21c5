"""Shell: write Job phase changes — the `job_records` upsert and their announcements, batched.

The job driver (jobs.py) hands each phase change here; its row and messages come from the pure
`core/job_phase_record.py`. Jobs that change phase together (a burst of Jobs, each one pod) share
one transaction: one upsert of their rows (a job twice in a batch: its newest) and their messages
into the controller's outbox, after which the relay is woken to publish them.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.controller.core.job_phase_record import JobPhaseRecord, job_phase_record
from services.controller.core.jobstate import ObservedJob
from shared.batching import Batcher
from shared.storage import tables
from shared.storage.unit_of_work import unit_of_work

_UPDATED_ON_CHANGE = ("phase", "retry_count", "version", "updated_at")


class JobPhaseRecords:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], *, on_committed: Callable[[], None]
    ) -> None:
        self._sessions = sessions
        self._on_committed = on_committed
        self._batch = Batcher(self._write)

    async def record(self, before: ObservedJob, after: ObservedJob) -> None:
        """Record the change from `before` to `after`; returns once it is committed."""
        await self._batch.submit(job_phase_record(before, after))

    async def _write(self, records: list[JobPhaseRecord]) -> list[None]:
        """The phase changes of jobs that moved together: one upsert and their announcements."""
        rows = {record.row["uid"]: record.row for record in records}  # a job twice in one batch: its newest
        async with unit_of_work(self._sessions, tables.ControllerOutbox, wake=self._on_committed) as work:
            statement = insert(tables.JobRecord).values(list(rows.values()))
            await work.session.execute(
                statement.on_conflict_do_update(
                    index_elements=["uid"],
                    set_={c: statement.excluded[c] for c in _UPDATED_ON_CHANGE},
                )
            )
            work.publish_all_after(event for record in records for event in record.events)
        return [None] * len(records)
