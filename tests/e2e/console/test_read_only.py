"""The console `phalanx up` starts holds read-only credentials: it could not change the cluster's state.

Its process environment names the identities it runs as; with them, a write to PostgreSQL is refused
and so is a publish on NATS (the same probes tests/e2e/test_privileges.py makes for the services).
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from phalanx import stack as stacks
from shared.config import NatsSettings
from tests.e2e.test_privileges import try_to_forge_a_decision, write_as

pytestmark = pytest.mark.e2e


def test_the_consoles_database_role_reads_and_cannot_write(stack: stacks.Stack) -> None:
    url = stack.process("console").env["CONSOLE_POSTGRES__URL"]
    if "phalanx_reader" not in url:
        pytest.skip("PostgreSQL comes from the environment: its roles are not ours")
    asyncio.run(write_as(url, "SELECT count(*) FROM gang_verdicts"))
    for table in ("jobs", "queues", "gang_verdicts"):
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match=table):
            asyncio.run(write_as(url, f"DELETE FROM {table}"))


def test_the_consoles_nats_identity_is_the_auditor_and_cannot_publish(stack: stacks.Stack) -> None:
    env = stack.process("console").env
    if "CONSOLE_NATS__USER" not in env:
        pytest.skip("NATS comes from the environment: its authorization is not ours")
    assert env["CONSOLE_NATS__USER"] == "auditor"
    settings = NatsSettings(
        url=env["CONSOLE_NATS__URL"], user=env["CONSOLE_NATS__USER"], password=env["CONSOLE_NATS__PASSWORD"]
    )
    refusals = asyncio.run(try_to_forge_a_decision(settings))
    assert any("permissions violation" in r and "decisions.default.forged" in r for r in refusals)
