"""The leading scheduler's runtime records in PostgreSQL: a run is written when its gang starts and
closed when it ends, also when its PodGroup completes and leaves the cycle's snapshot, and a new
leader learns each job class's runtimes back from the table (services/scheduler/runtime_records.py).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from services.scheduler.core.estimates import EXPECTED_RUNTIME, estimate
from services.scheduler.core.snapshot import GangInfo, Snapshot, TaskInfo
from services.scheduler.runtime_records import RuntimeRecords
from shared.domain.resources import Resources
from shared.storage import tables
from shared.storage.engine import make_sessions
from shared.volcano.keys import JOB_CLASS

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def gang(name: str, status: str, *, runtime: str | None = "60s") -> GangInfo:
    annotations = {JOB_CLASS: "resnet", **({EXPECTED_RUNTIME: runtime} if runtime else {})}
    task = TaskInfo(
        uid=f"{name}-0", namespace="ml", name=f"{name}-worker-0", request=Resources({"cpu": 1000}),
        node="n1", status=status, started=T0,
    )  # fmt: skip
    return GangInfo(
        uid=name, namespace="ml", name=name, queue="team", min_member=1, created=T0, tasks=(task,),
        phase="Running", annotations=annotations,
    )  # fmt: skip


async def cycle(
    book: RuntimeRecords, engine: AsyncEngine, gangs: tuple[GangInfo, ...], at: float
) -> Snapshot:
    sessions = make_sessions(engine)
    snapshot = await book.prepare(sessions, Snapshot((), (), gangs, T0 + timedelta(seconds=at)), epoch=1)
    runs = book.changes(snapshot)
    async with sessions() as session, session.begin():
        await book.write(session, runs)
    book.committed(runs)
    return snapshot


async def records(engine: AsyncEngine) -> dict[str, tuple[object, ...]]:
    r = tables.RuntimeRecord
    async with engine.connect() as connection:
        rows = await connection.execute(
            select(r.gang_uid, r.estimate_seconds, r.estimate_source, r.actual_seconds, r.outcome)
        )
        return {row[0]: tuple(row[1:]) for row in rows}


async def test_runs_are_recorded_and_a_new_leader_learns_from_them(engine: AsyncEngine) -> None:
    book = RuntimeRecords()
    await cycle(book, engine, (gang("a", "Running"), gang("b", "Running")), at=10)
    assert await records(engine) == {
        "a": (60.0, "annotation", None, None),
        "b": (60.0, "annotation", None, None),
    }
    # a's pods succeed; b's PodGroup completes and leaves the snapshot before its pods are seen done.
    async with engine.begin() as connection:
        await connection.execute(
            insert(tables.PodGroup).values(
                uid="b", namespace="ml", name="b", queue="team", min_member=1, phase="Completed",
                resource_version=1, created_at=T0,
            )
        )  # fmt: skip
    await cycle(book, engine, (gang("a", "Succeeded"),), at=70)
    assert await records(engine) == {
        "a": (60.0, "annotation", 70.0, "Succeeded"),
        "b": (60.0, "annotation", 70.0, "Succeeded"),
    }
    await cycle(book, engine, (), at=80)  # nothing is written twice
    assert (await records(engine))["a"] == (60.0, "annotation", 70.0, "Succeeded")

    # Another run of the class, a third: a new leader reads the history back and learns from it.
    await cycle(book, engine, (replace(gang("c", "Succeeded"), uid="c"),), at=90)
    # Gangs whose PodGroup is deleted: their pods' last phases say how they ended.
    await cycle(book, engine, (gang("e", "Running"), gang("f", "Running")), at=100)
    async with engine.begin() as connection:
        for name, phase in (("e", "Running"), ("f", "Succeeded")):
            await connection.execute(
                insert(tables.PodGroup).values(
                    uid=name, namespace="ml", name=name, queue="team", min_member=1, phase="Running",
                    deleted=True, resource_version=2, created_at=T0,
                )
            )  # fmt: skip
            await connection.execute(
                insert(tables.Pod).values(
                    uid=f"{name}-0", namespace="ml", name=f"{name}-worker-0", group_name=name, request={},
                    phase=phase, resource_version=2, created_at=T0,
                )
            )  # fmt: skip
    await cycle(book, engine, (), at=110)
    found = await records(engine)
    assert (found["e"][3], found["f"][3]) == ("Ended", "Succeeded")

    leader = RuntimeRecords()
    snapshot = await leader.prepare(make_sessions(engine), Snapshot((), (), (), T0), epoch=2)
    assert snapshot.runtime_history == {"team/resnet": (70.0, 70.0, 90.0, 110.0)}  # e is not learned
    unannotated = gang("d", "Pending", runtime=None)
    assert estimate(unannotated, snapshot.runtime_history).source == "learned"
    assert estimate(unannotated, snapshot.runtime_history).seconds == 110.0
