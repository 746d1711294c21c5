"""Leader fencing on a real PostgreSQL: two schedulers never both commit decisions."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable
from datetime import UTC, datetime

import pytest
from nats.js.api import AckPolicy, ConsumerConfig
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from services.scheduler.app import INGEST_DURABLE, INGEST_SUBJECTS
from services.scheduler.leadership import Leadership, LostLeadership
from shared.bus.nats import NatsBus
from shared.config import NatsSettings
from shared.messages import subjects
from shared.storage import tables
from shared.storage.engine import make_sessions
from tests.waiting import until

pytestmark = pytest.mark.integration


async def test_only_one_holder_leads_and_a_takeover_fences_the_old_leader(engine: AsyncEngine) -> None:
    sessions = make_sessions(engine)
    first = Leadership(sessions, holder="first", lease_seconds=30)
    second = Leadership(sessions, holder="second", lease_seconds=30)

    assert await first.try_acquire_or_renew()
    assert not await second.try_acquire_or_renew(), "an unexpired lease keeps others out"
    assert await first.try_acquire_or_renew(), "the holder renews"

    # The first leader stalls past its lease (a long GC pause, a frozen VM) ...
    async with sessions() as session, session.begin():
        await session.execute(text("UPDATE scheduler_leader SET expires_at = now() - interval '1 second'"))
    assert await second.try_acquire_or_renew()
    assert second.epoch == (first.epoch or 0) + 1

    # ... and wakes up believing it leads: its commit is refused.
    async with sessions() as session, session.begin():
        with pytest.raises(LostLeadership):
            await first.fence(session)
    async with sessions() as session, session.begin():
        assert await second.fence(session) == second.epoch


async def test_a_takeover_waits_for_a_commit_in_flight(engine: AsyncEngine) -> None:
    """The fence holds the leadership row until the commit ends, so no takeover slips in between."""
    sessions = make_sessions(engine)
    leader = Leadership(sessions, holder="leader", lease_seconds=1.5)
    rival = Leadership(sessions, holder="rival", lease_seconds=30)
    assert await leader.try_acquire_or_renew()

    async with sessions() as session, session.begin():
        await leader.fence(session)
        await asyncio.sleep(1.6)  # the lease runs out while the commit is still open
        takeover = asyncio.create_task(rival.try_acquire_or_renew())
        await asyncio.sleep(0.3)
        assert not takeover.done(), "the takeover must wait for the fenced commit"
    assert await takeover


def _scheduler(
    database_url: str, nats_url: str, holder: str, *, ingest: bool = False
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "SCHEDULER_POSTGRES__URL": database_url,
        "SCHEDULER_NATS__URL": nats_url,
        "SCHEDULER_INGEST": str(ingest).lower(),
        "SCHEDULER_HOLDER": holder,
        "SCHEDULER_LEASE_SECONDS": "2",
        "SCHEDULER_CYCLE_PERIOD_SECONDS": "0.1",
        "SCHEDULER_HEALTH_PORT": "0",
    }
    code = "from services.scheduler.__main__ import main; main()"
    return subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


async def _equals(count: Awaitable[int], expected: int) -> bool:
    return await count == expected


async def _ingest_caught_up(nats_url: str) -> None:
    """The tables are seeded directly: an ingest consumer with nothing pending says they are
    current (a new leader waits for ingest to catch up before its first cycle)."""
    bus = await NatsBus.connect(NatsSettings(url=nats_url), name="test")
    try:
        await bus.ensure_streams()
        await bus.js.add_consumer(
            subjects.CLUSTER_STREAM,
            ConsumerConfig(
                durable_name=INGEST_DURABLE, ack_policy=AckPolicy.EXPLICIT, filter_subjects=INGEST_SUBJECTS
            ),
        )
    finally:
        await bus.close()


async def _seed_gangs(engine: AsyncEngine, count: int) -> None:
    async with engine.begin() as connection:
        await connection.execute(
            tables.Node.__table__.insert(),
            [
                {
                    "name": f"n{i}",
                    "allocatable": {"cpu": 64000, "memory": 2**40, "pods": 110000},
                    "labels": {},
                    "taints": None,
                    "resource_version": 1,
                }
                for i in range(4)
            ],
        )
        await connection.execute(
            tables.Queue.__table__.insert(), [{"name": "default", "resource_version": 1}]
        )
    for i in range(count):
        await _add_gang(engine, f"g{i}", members=2)


async def _add_gang(engine: AsyncEngine, name: str, *, members: int) -> None:
    now = datetime.now(UTC)
    async with engine.begin() as connection:
        await connection.execute(
            tables.PodGroup.__table__.insert(),
            [
                {
                    "uid": name,
                    "namespace": "default",
                    "name": name,
                    "min_member": members,
                    "phase": "Inqueue",
                    "created_at": now,
                    "resource_version": 1,
                }
            ],
        )
        await connection.execute(
            tables.Pod.__table__.insert(),
            [
                {
                    "uid": f"{name}-{j}",
                    "namespace": "default",
                    "name": f"{name}-{j}",
                    "group_name": name,
                    "request": {"cpu": 1000, "pods": 1000},
                    "created_at": now,
                    "resource_version": 1,
                }
                for j in range(members)
            ],
        )


async def test_two_scheduler_processes_never_both_commit(
    engine: AsyncEngine, database_url: str, nats_url: str
) -> None:
    await _seed_gangs(engine, 20)
    await _ingest_caught_up(nats_url)
    processes = [_scheduler(database_url, nats_url, "alpha"), _scheduler(database_url, nats_url, "beta")]
    try:

        async def bound_pods() -> int:
            async with engine.connect() as connection:
                return int(
                    (
                        await connection.execute(
                            select(func.count())
                            .select_from(tables.Decision)
                            .where(tables.Decision.kind == "bind")
                        )
                    ).scalar_one()
                )

        # Two interpreters starting on a loaded machine can take a while: wait for the work, not a time.
        await until(lambda: _equals(bound_pods(), 40), "the first leader binds every pod", within=120)
        # Kill whoever leads; the other takes over once the lease expires.
        async with engine.connect() as connection:
            holder = (await connection.execute(text("SELECT holder FROM scheduler_leader"))).scalar_one()
        leader = processes[0] if holder == "alpha" else processes[1]
        leader.send_signal(signal.SIGKILL)
        await _add_gang(engine, "late", members=2)  # new work for the survivor
        await until(lambda: _equals(bound_pods(), 42), "the survivor binds the late gang", within=120)
    finally:
        for process in processes:
            process.kill()
            process.wait()

    async with engine.connect() as connection:
        rows = (
            await connection.execute(
                select(tables.Decision.pod_uid, tables.Decision.epoch).where(tables.Decision.kind == "bind")
            )
        ).all()
    per_pod: dict[str, int] = {}
    for pod, _ in rows:
        per_pod[pod] = per_pod.get(pod, 0) + 1
    assert len(per_pod) == 42, "every pod was placed, also after the failover"
    assert set(per_pod.values()) == {1}, "no pod was placed twice"
    epochs = sorted({epoch for _, epoch in rows})
    assert len(epochs) == 2, f"one epoch before and one after the failover, got {epochs}"
