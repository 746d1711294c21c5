"""reliability.md §6.1 T3, the zombie leader: two scheduler processes on a real PostgreSQL and NATS;
the leader is paused (SIGSTOP) past its lease mid-work, the standby takes over and places new
work, then the old leader is woken (SIGCONT) believing it still leads, while more work arrives.

No pod is ever placed twice, and every decision of the old epoch was committed before the first
of the new one: the woken process decides nothing under its old epoch.
"""

from __future__ import annotations

import asyncio
import signal

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from shared.storage import tables
from tests.integration.scheduler.test_leadership import _add_gang, _ingest_caught_up, _scheduler, _seed_gangs
from tests.waiting import until

pytestmark = pytest.mark.integration


async def decided(engine: AsyncEngine) -> int:
    async with engine.connect() as connection:
        query = select(func.count()).select_from(tables.Decision).where(tables.Decision.kind == "bind")
        return int((await connection.execute(query)).scalar_one())


async def wait_for_binds(engine: AsyncEngine, count: int, within: float = 45.0) -> None:
    async def enough() -> bool:
        return await decided(engine) >= count

    await until(enough, f"{count} binds decided", within=within, every=0.1)


async def leader(engine: AsyncEngine) -> tuple[str, int]:
    async with engine.connect() as connection:
        row = (await connection.execute(text("SELECT holder, epoch FROM scheduler_leader"))).one()
    return str(row[0]), int(row[1])


@pytest.mark.timeout(240)
async def test_a_leader_paused_past_its_lease_decides_nothing_when_it_wakes(
    engine: AsyncEngine, database_url: str, nats_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Paused inside a transaction, the leader holds its leader row until the server ends the
    # idle transaction (docs/reliability.md, path 4); short timeouts keep the test short.
    monkeypatch.setenv("SCHEDULER_POSTGRES__IDLE_IN_TRANSACTION_TIMEOUT_SECONDS", "3")
    monkeypatch.setenv("SCHEDULER_POSTGRES__LOCK_TIMEOUT_SECONDS", "1")
    await _seed_gangs(engine, 10)
    await _ingest_caught_up(nats_url)
    processes = {name: _scheduler(database_url, nats_url, name) for name in ("alpha", "beta")}
    try:
        await wait_for_binds(engine, 20, within=90)  # two processes starting on a busy machine
        zombie, old_epoch = await leader(engine)
        processes[zombie].send_signal(signal.SIGSTOP)
        await _add_gang(engine, "while-paused", members=2)
        await wait_for_binds(engine, 22)  # the standby took over (lease 2 s) and placed it
        survivor, new_epoch = await leader(engine)
        assert survivor != zombie
        assert new_epoch > old_epoch
        processes[zombie].send_signal(signal.SIGCONT)
        await asyncio.sleep(1.0)  # the woken process runs its cycles, believing it leads
        await _add_gang(engine, "after-waking", members=2)
        await wait_for_binds(engine, 24)
        await asyncio.sleep(2.0)  # room for a late, unfenced commit to show
    finally:
        for process in processes.values():
            process.send_signal(signal.SIGCONT)
            process.kill()
            process.wait()

    await assert_one_takeover_and_no_pod_placed_twice(engine, pods=24, epochs=(old_epoch, new_epoch))


async def assert_one_takeover_and_no_pod_placed_twice(
    engine: AsyncEngine, *, pods: int, epochs: tuple[int, int]
) -> None:
    """The per-epoch commit log: every pod placed once, by the two epochs only, and every decision
    of the old epoch committed before the first of the new one (decision ids follow commit order)."""
    old_epoch, new_epoch = epochs
    async with engine.connect() as connection:
        rows = (
            await connection.execute(
                select(tables.Decision.pod_uid, tables.Decision.epoch, tables.Decision.id).where(
                    tables.Decision.kind == "bind"
                )
            )
        ).all()
    per_pod: dict[str, int] = {}
    for pod, _, _ in rows:
        per_pod[pod] = per_pod.get(pod, 0) + 1
    assert len(per_pod) == pods, "every pod placed, before, during and after the fault"
    assert set(per_pod.values()) == {1}, "no pod placed twice"
    assert {epoch for _, epoch, _ in rows} == {old_epoch, new_epoch}
    last_old = max(row_id for _, epoch, row_id in rows if epoch == old_epoch)
    first_new = min(row_id for _, epoch, row_id in rows if epoch == new_epoch)
    assert last_old < first_new, "the old epoch decided nothing after the takeover"
