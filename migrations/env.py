"""Alembic environment: migrates the scheduling database to `shared.storage.tables.metadata`.

The URL is the caller's (`shared.storage.migrate` sets it on the config) or PHALANX_DATABASE_URL.
Runs on the async engine, as the services do.
"""

from __future__ import annotations

import asyncio
import os

from alembic import context
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from shared.storage.tables import metadata

config = context.config


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url") or os.environ.get("PHALANX_DATABASE_URL")
    if not url:
        raise SystemExit("set PHALANX_DATABASE_URL (postgresql+asyncpg://...) to run migrations")
    return url


def _migrate(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=metadata, compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


async def _run() -> None:
    engine = create_async_engine(_url())
    async with engine.connect() as connection:
        await connection.run_sync(_migrate)
    await engine.dispose()


if context.is_offline_mode():
    context.configure(url=_url(), target_metadata=metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    asyncio.run(_run())
