"""The PostgreSQL login roles of each service, as provisioned on servers Phalanx starts itself.

Migrations 0004 and 0005 grant each role exactly the tables migrations/README.md gives its service (and
0004 creates the roles NOLOGIN where nobody made them first). Here they get LOGIN and a password, and
the migrator role becomes the owner of the database, so that migrations run as their own role and
own every table. On a real cluster a DBA does the same (docs/security.md).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping

import asyncpg
from sqlalchemy.engine import make_url

MIGRATOR = "migrator"
READER = "reader"
ROLES = (MIGRATOR, "scheduler", "controller", "admission", "watcher", READER)

_SAFE = re.compile(r"^[A-Za-z0-9_-]+$")


def role_name(role: str) -> str:
    """The database role of a Phalanx role: `scheduler` → `phalanx_scheduler`."""
    return f"phalanx_{role}"


def _asyncpg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def provision(admin_url: str, passwords: Mapping[str, str]) -> None:
    """Give each role LOGIN and its password (creating it if needed); the migrator owns the database."""
    database = make_url(admin_url).database
    connection = await asyncpg.connect(_asyncpg_dsn(admin_url))
    try:
        for role in ROLES:
            name, password = role_name(role), passwords[role]
            if not _SAFE.match(password):
                raise ValueError(f"password of {name} must be URL-safe characters only")
            exists = await connection.fetchval("SELECT 1 FROM pg_roles WHERE rolname = $1", name)
            verb = "ALTER" if exists else "CREATE"
            await connection.execute(f"{verb} ROLE {name} LOGIN PASSWORD '{password}'")
        migrator = role_name(MIGRATOR)
        await connection.execute(f'ALTER DATABASE "{database}" OWNER TO {migrator}')
        # Tables made before the roles existed (an older state folder) pass to the migrator too.
        for (table,) in await connection.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"):
            await connection.execute(f'ALTER TABLE public."{table}" OWNER TO {migrator}')
    finally:
        await connection.close()


def provision_blocking(admin_url: str, passwords: Mapping[str, str]) -> None:
    asyncio.run(provision(admin_url, passwords))
