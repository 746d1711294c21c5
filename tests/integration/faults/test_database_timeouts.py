"""Path 4 of the fault plan: a leader that hangs inside a transaction does not hold the leader
row forever, on a real PostgreSQL.

The leader fences a commit (its transaction holds the leader row FOR SHARE) and then stops
answering, as a paused process or a half-open connection would. The server ends the idle
transaction after the idle-in-transaction timeout, and the standby, whose own waits for the lock
are bounded by the lock timeout, takes over once the lease has expired.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from sqlalchemy.exc import DBAPIError

from services.scheduler.leadership import Leadership
from shared.config import PostgresSettings
from shared.storage.engine import make_engine, make_sessions
from tests.waiting import until

pytestmark = pytest.mark.integration


async def test_a_leader_hung_inside_its_commit_does_not_block_the_standby(database_url: str) -> None:
    settings = PostgresSettings(
        url=database_url, lock_timeout_seconds=1, idle_in_transaction_timeout_seconds=1
    )
    leader_engine, standby_engine = make_engine(settings), make_engine(settings)
    leader = Leadership(make_sessions(leader_engine), holder="leader", lease_seconds=1.5)
    standby = Leadership(make_sessions(standby_engine), holder="standby", lease_seconds=1.5)
    try:
        assert await leader.try_acquire_or_renew()

        async def hang_inside_a_commit() -> None:
            async with make_sessions(leader_engine)() as session, session.begin():
                await leader.fence(session)
                await asyncio.sleep(30)  # never commits: the process stopped answering

        hung = asyncio.create_task(hang_inside_a_commit())
        await asyncio.sleep(0.3)

        async def take_over() -> bool:
            with contextlib.suppress(DBAPIError):  # a lock wait that timed out: try again
                return await standby.try_acquire_or_renew()
            return False

        await until(take_over, "the standby taking the lease over", within=20, every=0.2)
        assert standby.is_leader
        hung.cancel()
        with contextlib.suppress(asyncio.CancelledError, DBAPIError):
            await hung
    finally:
        await leader_engine.dispose()
        await standby_engine.dispose()
