"""reliability.md §6.1 T4: the leader's database link goes half-open, on real PostgreSQL and NATS.

Two scheduler processes; the leader's every PostgreSQL connection goes through the fault proxy
(phalanx/chaos/proxy.py), which is switched to `blackhole` mid-work: the connections stay open
and nothing crosses them either way, as when a network path dies without a reset. The link is
cut while the leader is inside the commit that fences it (held open a second by the failpoint
`sched.inside_fenced_commit`), so its open transaction holds the leader row until the server
ends it (idle in transaction timeout); its client gives up on its statements (command timeout).
The standby takes over once the lease has run out and places new work. The link then heals,
the old leader comes back believing it may lead, and more work arrives.

The per-epoch commit log (decision ids follow commit order) shows the epochs' commits never
overlap: the old epoch decided nothing after the new one's first decision, and no pod was
placed twice.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from phalanx.chaos.proxy import FaultProxy
from shared.failpoints import ENV
from tests.integration.faults.test_fault_proxy import _through
from tests.integration.faults.test_zombie_leader import (
    assert_one_takeover_and_no_pod_placed_twice,
    leader,
    wait_for_binds,
)
from tests.integration.scheduler.test_leadership import _add_gang, _ingest_caught_up, _scheduler, _seed_gangs
from tests.waiting import until

pytestmark = pytest.mark.integration

# Short bounds keep the test short; production's are longer (shared/config.py), the shape is the
# same: takeover within the lease plus the server's and the client's timeouts.
TIMEOUTS = {
    "SCHEDULER_POSTGRES__STATEMENT_TIMEOUT_SECONDS": "2",  # the client gives up 5 s after this
    "SCHEDULER_POSTGRES__LOCK_TIMEOUT_SECONDS": "1",
    "SCHEDULER_POSTGRES__IDLE_IN_TRANSACTION_TIMEOUT_SECONDS": "3",
    "SCHEDULER_POSTGRES__CONNECT_TIMEOUT_SECONDS": "2",
}


async def leader_inside_its_commit(engine: AsyncEngine) -> bool:
    """A session of this database idle inside a transaction for a while: the leader, fenced and
    held by the failpoint (the standby's and the test's transactions are short)."""
    async with engine.connect() as connection:
        held = await connection.execute(
            text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND state = 'idle in transaction' AND now() - state_change > interval '300 milliseconds'"
            )
        )
        return bool(held.scalar_one())


@pytest.mark.timeout(300)
async def test_a_leader_whose_database_link_goes_half_open_is_replaced_and_fenced(
    engine: AsyncEngine, database_url: str, nats_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in TIMEOUTS.items():
        monkeypatch.setenv(name, value)
    await _seed_gangs(engine, 10)
    await _ingest_caught_up(nats_url)
    upstream = urlsplit(database_url)
    async with FaultProxy(upstream.hostname or "127.0.0.1", upstream.port or 5432) as proxy:
        monkeypatch.setenv(ENV, "sched.inside_fenced_commit=sleep(1)")
        behind = _scheduler(_through(database_url, proxy), nats_url, "behind-proxy")
        monkeypatch.delenv(ENV)
        processes = [behind]
        try:
            await wait_for_binds(engine, 20, within=90)  # the only scheduler: it leads
            holder, old_epoch = await leader(engine)
            assert holder == "behind-proxy"
            processes.append(_scheduler(database_url, nats_url, "direct"))
            await asyncio.sleep(2.0)  # the standby is up and polling the lease

            # The plan's case: the link dies while the leader holds the leader row, inside the
            # transaction that commits its decisions (held open 1 s by the failpoint).
            await until(lambda: leader_inside_its_commit(engine), "the leader inside its fenced commit")
            proxy.set_mode("blackhole")
            blackholed_at = time.monotonic()
            await _add_gang(engine, "while-blackholed", members=2)
            await wait_for_binds(engine, 22, within=90)  # the standby took over and placed it
            took_over = time.monotonic() - blackholed_at
            survivor, new_epoch = await leader(engine)
            assert survivor == "direct"

            proxy.set_mode("pass")  # the link heals: the old leader's new connections get through
            await asyncio.sleep(3.0)  # it runs its cycles again, perhaps believing it leads
            await _add_gang(engine, "after-healing", members=2)
            await wait_for_binds(engine, 24)
            await asyncio.sleep(3.0)  # room for a late, unfenced commit to show
        finally:
            for process in processes:
                process.kill()
                process.wait()
    print(f"the standby placed new work {took_over:.1f} s after the leader's link went half-open")

    await assert_one_takeover_and_no_pod_placed_twice(engine, pods=24, epochs=(old_epoch, new_epoch))
