"""Least privilege on the running stack (`phalanx up`): what a stolen or anonymous credential gets.

The stack's services run with the NATS users and PostgreSQL roles `phalanx up` gave them; here we
take the watcher's own settings from its process environment and try to act as the scheduler.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import asyncpg
import nats
import pytest
from nats.aio.client import Client
from sqlalchemy.engine import make_url

from phalanx import events
from phalanx import stack as stacks
from shared.bus.credentials import connect_options
from shared.config import NatsSettings
from shared.infra.passwords import without_user
from shared.messages import subjects

pytestmark = pytest.mark.e2e


def watcher_nats(stack: stacks.Stack) -> NatsSettings:
    env = stack.process("watcher").env
    return NatsSettings(url=env["WATCHER_NATS__URL"], user=env.get("WATCHER_NATS__USER"),
                        password=env.get("WATCHER_NATS__PASSWORD"))  # fmt: skip


async def decisions_stored_on(stack: stacks.Stack, subject: str) -> int:
    """How many messages the decisions stream holds on `subject`: the other tests on this stack go
    on deciding, so only the forged subject's count says whether the forgery got in."""
    client = await nats.connect(NatsSettings(url=stack.nats_url).servers)  # one URL, or a cluster's
    try:
        info = await client.jetstream().stream_info(subjects.DECISIONS_STREAM, subjects_filter=subject)
        return (info.state.subjects or {}).get(subject, 0)
    finally:
        await client.close()


async def try_to_forge_a_decision(settings: NatsSettings) -> list[str]:
    refusals: list[str] = []

    async def on_error(error: Exception) -> None:
        refusals.append(str(error).lower())

    client = await nats.connect(**connect_options(settings), error_cb=on_error, allow_reconnect=False)
    try:
        with pytest.raises(nats.errors.TimeoutError):
            await client.jetstream().publish(subjects.decision("default", "forged"), b"{}", timeout=2)
    finally:
        await client.close()
    return refusals


async def connect_refused(url: str) -> None:
    """Connect once, without retrying; the client is closed after, as nats-py leaves a refused
    first connection's socket open."""
    client = Client()
    try:
        await client.connect(url, allow_reconnect=False, max_reconnect_attempts=0)
    finally:
        await client.close()


def test_neither_an_anonymous_client_nor_the_watcher_can_publish_decisions(stack: stacks.Stack) -> None:
    if "WATCHER_NATS__USER" not in stack.process("watcher").env:
        pytest.skip("NATS comes from the environment: its authorization is not ours")
    anonymous = NatsSettings(url=without_user(stack.nats_url)).servers
    with pytest.raises(Exception, match=r"(?i)authorization"):
        asyncio.run(connect_refused(anonymous))
    refusals = asyncio.run(try_to_forge_a_decision(watcher_nats(stack)))
    assert any("permissions violation" in r and "decisions.default.forged" in r for r in refusals)
    assert asyncio.run(decisions_stored_on(stack, subjects.decision("default", "forged"))) == 0


async def write_as(url: str, statement: str) -> None:
    connection = await asyncpg.connect(make_url(url).set(drivername="postgresql").render_as_string(False))
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


def test_the_watchers_database_role_cannot_write_the_schedulers_tables(stack: stacks.Stack) -> None:
    env = stack.process("watcher").env
    if "phalanx_watcher" not in env["WATCHER_POSTGRES__URL"]:
        pytest.skip("PostgreSQL comes from the environment: its roles are not ours")
    for table in ("decisions", "queues", "scheduler_leader"):
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match=table):
            asyncio.run(write_as(env["WATCHER_POSTGRES__URL"], f"DELETE FROM {table}"))
    controller_url = stack.process("controller").env["CONTROLLER_POSTGRES__URL"]
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="decisions"):
        asyncio.run(write_as(controller_url, "UPDATE decisions SET epoch = epoch + 1000"))


def test_the_auditor_reads_the_audit_stream_and_publishes_nothing(stack: stacks.Stack) -> None:
    if not stack.auditor_nats_url or stack.auditor_nats_url == stack.nats_url:
        pytest.skip("NATS comes from the environment: its authorization is not ours")
    seen: list[str] = []
    since = datetime.now(UTC) - timedelta(hours=1)
    events.run(stack.auditor_nats_url, since=since, pattern=None, emit=seen.append, stop_after_idle=1.0)
    assert seen, "the services' audit events since the stack started"
    user, password = urlsplit(stack.auditor_nats_url).username, urlsplit(stack.auditor_nats_url).password
    auditor = NatsSettings(url=without_user(stack.auditor_nats_url), user=user, password=password)
    refusals = asyncio.run(try_to_forge_a_decision(auditor))
    assert any("permissions violation" in r for r in refusals)
