"""The unit of work on real PostgreSQL: rows and their announcements commit together, the relay is
woken after the commit only, and a transaction that fails announces nothing."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from shared.messages import jobs, subjects
from shared.messages.envelope import CloudEvent, new_event
from shared.storage import tables
from shared.storage.engine import make_sessions
from shared.storage.unit_of_work import unit_of_work

pytestmark = pytest.mark.integration


def row(name: str) -> tables.JobRecord:
    return tables.JobRecord(uid=f"u-{name}", namespace="default", name=name, phase="Running", state={})


def announcement(name: str) -> tuple[str, CloudEvent[Any]]:
    data = jobs.JobPhaseChanged(
        namespace="default", name=name, uid=f"u-{name}", previous=None, phase="Running"
    )
    return subjects.job_event("phase", "default", name), new_event(data, source="test")


async def counts(engine: AsyncEngine) -> tuple[int, int]:
    async with make_sessions(engine)() as session:
        records = (await session.execute(select(func.count()).select_from(tables.JobRecord))).scalar_one()
        waiting = (
            await session.execute(select(func.count()).select_from(tables.ControllerOutbox))
        ).scalar_one()
    return records, waiting


async def test_rows_and_announcements_commit_together_and_the_relay_is_woken_after(
    migrated_engine: AsyncEngine,
) -> None:
    woken: list[bool] = []
    async with unit_of_work(
        make_sessions(migrated_engine), tables.ControllerOutbox, wake=lambda: woken.append(True)
    ) as work:
        work.session.add(row("a"))
        subject, event = announcement("a")
        work.publish_after(subject, event)
        assert not woken, "not before the commit"
    assert len(woken) == 1
    assert await counts(migrated_engine) == (1, 1)


async def test_a_failed_transaction_announces_nothing_and_wakes_nobody(migrated_engine: AsyncEngine) -> None:
    woken: list[bool] = []

    async def half_way() -> None:
        async with unit_of_work(
            make_sessions(migrated_engine), tables.ControllerOutbox, wake=lambda: woken.append(True)
        ) as work:
            work.session.add(row("b"))
            work.publish_all_after([announcement("b")])
            raise RuntimeError("the handler failed half way")

    with pytest.raises(RuntimeError):
        await half_way()
    assert woken == []
    assert await counts(migrated_engine) == (0, 0)


async def test_a_transaction_with_nothing_to_announce_does_not_wake_the_relay(
    migrated_engine: AsyncEngine,
) -> None:
    woken: list[bool] = []
    async with unit_of_work(
        make_sessions(migrated_engine), tables.ControllerOutbox, wake=lambda: woken.append(True)
    ) as work:
        work.session.add(row("c"))
    assert woken == []
    assert await counts(migrated_engine) == (1, 0)
