"""Test fixtures for real infrastructure: NATS with JetStream and PostgreSQL.

Servers come from the environment (PHALANX_TEST_NATS_URL, PHALANX_TEST_DATABASE_URL), else from
testcontainers when a Docker engine answers, else as local processes started for this session.
Each test that needs PostgreSQL gets its own database cloned from a migrated template; each test
that needs NATS starts from a server with no streams.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import nats
import pytest
from sqlalchemy.engine import make_url

from shared.bus import permissions
from shared.infra import local, provision
from shared.storage import migrate, roles

TEMPLATE = "phalanx_template"

LAYERS = ("unit", "integration", "e2e")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test carries a layer marker, or `make unit` and friends would silently skip it."""
    unmarked = sorted(
        {item.nodeid.split("::")[0] for item in items if not any(item.get_closest_marker(m) for m in LAYERS)}
    )
    if unmarked:
        raise pytest.UsageError(
            "every test file declares its layer (pytestmark = pytest.mark.unit|integration|e2e); "
            f"these do not: {', '.join(unmarked)}"
        )


@pytest.fixture(scope="session")
def infra_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("infra")


@pytest.fixture(scope="session")
def nats_provided(infra_dir: Path) -> Iterator[provision.Provided]:
    """The session's NATS server; one started here enforces shared.bus.permissions."""
    provided = provision.provide_nats(infra_dir, env="PHALANX_TEST_NATS_URL")
    yield provided
    provided.stop()


@pytest.fixture(scope="session")
def nats_server(nats_provided: provision.Provided) -> str:
    """The server's URL as the bootstrap identity (allowed everything), as tests drive the bus."""
    return nats_provided.url_as(permissions.BOOTSTRAP)


@pytest.fixture(scope="session")
def postgres_provided(infra_dir: Path) -> Iterator[provision.Provided]:
    provided = provision.provide_postgres(infra_dir, env="PHALANX_TEST_DATABASE_URL", durable=False)
    yield provided
    provided.stop()
    if provided.server is not None:
        local.discard_fallback_data(provided.server)


@pytest.fixture(scope="session")
def postgres_server(postgres_provided: provision.Provided) -> str:
    """The URL of a database on the server; tests get clones of a migrated template next to it."""
    return postgres_provided.url


def _with_database(url: str, database: str) -> str:
    return make_url(url).set(database=database).render_as_string(hide_password=False)


def _asyncpg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture(scope="session")
async def migrated_template(postgres_provided: provision.Provided) -> str:
    """Migrated as the migrator role where we made one (it then owns the tables), as `phalanx up` does."""
    owner = postgres_provided.credentials.get(roles.MIGRATOR, (None, None))[0]
    admin = await asyncpg.connect(_asyncpg_dsn(postgres_provided.url))
    try:
        await admin.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
        await admin.execute(f"CREATE DATABASE {TEMPLATE}" + (f" OWNER {owner}" if owner else ""))
    finally:
        await admin.close()
    import asyncio

    migrator_url = postgres_provided.url_as(roles.MIGRATOR)
    await asyncio.to_thread(migrate.upgrade, _with_database(migrator_url, TEMPLATE))
    return TEMPLATE


@pytest.fixture
async def empty_database_url(postgres_server: str) -> AsyncIterator[str]:
    """A new, empty database (no schema) for migration tests."""
    async with _Database(postgres_server, template=None) as url:
        yield url


@pytest.fixture
async def database_url(postgres_server: str, migrated_template: str) -> AsyncIterator[str]:
    """A new database with the schema at head, cloned from the template."""
    async with _Database(postgres_server, template=migrated_template) as url:
        yield url


class _Database:
    def __init__(self, server: str, *, template: str | None) -> None:
        self.server = server
        self.template = template
        self.name = f"t_{uuid.uuid4().hex[:12]}"

    async def __aenter__(self) -> str:
        admin = await asyncpg.connect(_asyncpg_dsn(self.server))
        try:
            clause = f" TEMPLATE {self.template}" if self.template else ""
            await admin.execute(f"CREATE DATABASE {self.name}{clause}")
        finally:
            await admin.close()
        return _with_database(self.server, self.name)

    async def __aexit__(self, *exc: object) -> None:
        admin = await asyncpg.connect(_asyncpg_dsn(self.server))
        try:
            await admin.execute(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")
        finally:
            await admin.close()


@pytest.fixture
async def nats_url(nats_server: str) -> str:
    """The session's NATS server with every stream removed, so each test starts clean."""
    nc = await nats.connect(nats_server)
    try:
        js = nc.jetstream()
        for info in await js.streams_info():
            await js.delete_stream(info.config.name)
    finally:
        await nc.close()
    return nats_server
