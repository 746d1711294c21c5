"""The cycle's in-memory mirror on a real PostgreSQL: after the first read, a cycle reads only the
rows ingest changed since, and still sees every change (binds, deletions, completed gangs)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from services.scheduler.ingest import INGEST_LOCK, Ingester
from services.scheduler.snapshot_reader import ReadResult, ShellMemory, read_snapshot
from shared.messages.envelope import CloudEvent
from shared.storage.engine import make_sessions
from tests.integration.scheduler.test_ingest import changed, pod

pytestmark = pytest.mark.integration


def group(version: int, phase: str) -> CloudEvent[Any]:
    return changed(
        "PodGroup",
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {
                "name": "g",
                "namespace": "default",
                "uid": "uid-g",
                "resourceVersion": str(version),
                "creationTimestamp": "2026-01-01T00:00:00Z",
            },
            "spec": {"minMember": 1},
            "status": {"phase": phase},
        },
    )


async def read(engine: AsyncEngine, memory: ShellMemory) -> ReadResult:
    async with make_sessions(engine)() as session, session.begin():
        return await read_snapshot(session, now=datetime.now(UTC), expire_before=None, memory=memory)


def tasks(result: ReadResult) -> dict[str, tuple[str | None, str]]:
    return {t.name: (t.node, t.status) for g in result.snapshot.gangs for t in g.tasks}


async def test_a_cycle_reads_only_what_changed_and_sees_every_change(engine: AsyncEngine) -> None:
    ingester = Ingester(make_sessions(engine), scheduler_names=["volcano"])
    await ingester.handle([group(1, "Inqueue"), *(pod(f"p{i}", 2) for i in range(20))])
    memory = ShellMemory()
    first = await read(engine, memory)
    assert len(tasks(first)) == 20
    assert memory.mirror.changed_rows == 21

    await ingester.handle([pod("p0", 5, node="n1"), pod("p1", 5, change="DELETED"), pod("late", 5)])
    second = await read(engine, memory)
    assert memory.mirror.changed_rows == 3  # not the 22 rows the tables hold
    seen = tasks(second)
    assert seen["p0"] == ("n1", "Running")
    assert "p1" not in seen
    assert seen["late"] == (None, "Pending")
    assert len(seen) == 20
    # Built from what changed, the picture is the one a new leader builds from every row.
    whole = (await read(engine, ShellMemory())).snapshot
    assert (second.snapshot.gangs, second.snapshot.settled) == (whole.gangs, whole.settled)

    # Nothing changed: nothing read, the same picture, and the read says so.
    third = await read(engine, memory)
    assert memory.mirror.changed_rows == 0
    assert tasks(third) == seen
    assert third.quiet
    assert not second.quiet

    # A completed gang leaves the snapshot; a fresh memory (a new leader) reads it all and agrees.
    await ingester.handle([group(9, "Completed")])
    assert (await read(engine, memory)).snapshot.gangs == ()
    assert (await read(engine, ShellMemory())).snapshot.gangs == ()


async def test_ingest_transactions_take_turns_so_numbers_follow_commit_order(engine: AsyncEngine) -> None:
    """While another ingest transaction holds the lock, a second one waits rather than drawing
    numbers that could commit before the first's lower ones."""
    sessions = make_sessions(engine)
    ingester = Ingester(sessions, scheduler_names=["volcano"])
    async with sessions() as holder, holder.begin():
        await holder.execute(select(func.pg_advisory_xact_lock(INGEST_LOCK)))
        waiting = asyncio.create_task(ingester.handle([group(1, "Inqueue"), pod("p", 1)]))
        await asyncio.sleep(0.5)
        assert not waiting.done()
    await asyncio.wait_for(waiting, 10)
    assert "p" in tasks(await read(engine, ShellMemory()))
