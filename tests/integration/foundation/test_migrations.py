"""The schema's migrations against a real PostgreSQL: up, down and up again, matching the models."""

from __future__ import annotations

import asyncio

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from shared.storage import migrate
from shared.storage.tables import OWNERS, metadata

pytestmark = pytest.mark.integration


async def _tables(url: str) -> set[str]:
    engine = create_async_engine(url)
    async with engine.connect() as connection:
        names = await connection.run_sync(lambda c: set(inspect(c).get_table_names()))
    await engine.dispose()
    return names - {"alembic_version"}


async def _schema_diff(url: str) -> list[object]:
    def diff(connection: Connection) -> list[object]:
        return list(compare_metadata(MigrationContext.configure(connection), metadata))

    engine = create_async_engine(url)
    async with engine.connect() as connection:
        result = await connection.run_sync(diff)
    await engine.dispose()
    return result


async def test_upgrade_downgrade_upgrade_is_clean(empty_database_url: str) -> None:
    await asyncio.to_thread(migrate.upgrade, empty_database_url)
    assert await _tables(empty_database_url) == set(metadata.tables)

    await asyncio.to_thread(migrate.downgrade, empty_database_url)
    assert await _tables(empty_database_url) == set()

    await asyncio.to_thread(migrate.upgrade, empty_database_url)
    assert await _tables(empty_database_url) == set(metadata.tables)


async def test_migrated_schema_matches_the_models(database_url: str) -> None:
    assert await _schema_diff(database_url) == []


def test_every_table_has_one_named_writer() -> None:
    assert set(OWNERS) == set(metadata.tables)
