"""One writer per table, enforced by PostgreSQL: each service's role against the migrated schema.

The grants of migrations 0004 and 0005 must say what migrations/README.md says: the test reads the ownership
table there and checks every table against every service role, then shows the refusals a
misbehaving (or compromised) service would meet.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from shared.infra import provision
from shared.storage import roles
from shared.storage.tables import metadata

pytestmark = pytest.mark.integration

README = Path(__file__).parents[3] / "migrations" / "README.md"
SERVICES = ("scheduler", "controller", "admission", "watcher")


def ownership_map() -> dict[str, str]:
    """table -> writing service, from the README's table (its rows: | `a`, `b` | service (...) | ...)."""
    owners: dict[str, str] = {}
    for line in README.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].startswith("`"):
            for table in re.findall(r"`([a-z_]+)`", cells[0]):
                owners[table] = cells[1].split()[0]
    return owners


@pytest.fixture
def connect_as(postgres_provided: provision.Provided, database_url: str) -> Callable[[str], str]:
    """role -> a DSN of the test's database as that role."""
    if not postgres_provided.credentials:
        pytest.skip("the PostgreSQL server comes from the environment: its roles are not ours")
    database = make_url(database_url).database

    def dsn(role: str) -> str:
        url = make_url(postgres_provided.url_as(role)).set(drivername="postgresql", database=database)
        return url.render_as_string(hide_password=False)

    return dsn


@pytest.fixture
async def sessions(connect_as: Callable[[str], str]) -> AsyncIterator[dict[str, asyncpg.Connection]]:
    opened = {role: await asyncpg.connect(connect_as(role)) for role in (*SERVICES, roles.READER)}
    yield opened
    for connection in opened.values():
        await connection.close()


def test_the_readme_names_a_writer_for_every_table() -> None:
    assert set(ownership_map()) == set(metadata.tables)


async def test_grants_match_the_ownership_map(sessions: dict[str, asyncpg.Connection]) -> None:
    owners = ownership_map()
    probe = next(iter(sessions.values()))
    for table, owner in owners.items():
        for service in SERVICES:
            may_write = await probe.fetchval(
                "SELECT has_table_privilege($1, $2, 'INSERT,UPDATE,DELETE')", roles.role_name(service), table
            )
            assert may_write == (service == owner), f"{service} writing {table}"
        reader_writes = await probe.fetchval(
            "SELECT has_table_privilege($1, $2, 'INSERT,UPDATE,DELETE')", roles.role_name(roles.READER), table
        )
        assert not reader_writes, f"reader writing {table}"


@pytest.mark.parametrize(
    ("service", "table"),
    [
        ("watcher", "decisions"),
        ("watcher", "queues"),
        ("admission", "queues"),
        ("admission", "pod_groups"),
        ("controller", "decisions"),
        ("controller", "scheduler_leader"),
        ("scheduler", "jobs"),
        ("scheduler", "gang_fences"),
        ("reader", "decisions"),
    ],
)
async def test_a_role_cannot_write_another_services_table(
    sessions: dict[str, asyncpg.Connection], service: str, table: str
) -> None:
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match=f"permission denied for table {table}"):
        await sessions[service].execute(f"DELETE FROM {table}")


async def test_each_service_reads_and_writes_what_it_owns(sessions: dict[str, asyncpg.Connection]) -> None:
    await sessions["scheduler"].execute("DELETE FROM decisions")
    await sessions["scheduler"].execute(
        "INSERT INTO scheduler_outbox (subject, payload, msg_id) VALUES ('s', '{}', 'm')"
    )
    await sessions["controller"].execute("DELETE FROM gang_fences")
    await sessions["controller"].execute(
        "INSERT INTO controller_outbox (subject, payload, msg_id) VALUES ('s', '{}', 'm')"
    )
    assert await sessions["admission"].fetchval("SELECT count(*) FROM queues") == 0
    assert await sessions["reader"].fetchval("SELECT count(*) FROM scheduler_outbox") == 1
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await sessions["watcher"].fetchval("SELECT count(*) FROM pods")
