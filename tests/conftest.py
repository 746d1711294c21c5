"""Test fixtures for real infrastructure: NATS with JetStream and PostgreSQL.

Servers come from the environment (PHALANX_TEST_NATS_URL, PHALANX_TEST_DATABASE_URL), else from
testcontainers when a Docker engine answers, else as local processes started for this session.
Each test that needs PostgreSQL gets its own database cloned from a migrated template; each test
that needs NATS starts from a server with no streams.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import nats
import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from shared.bus import permissions
from shared.infra import local, provision
from shared.storage import migrate, roles

# One per xdist worker (gw0, gw1...): workers may share a server given by PHALANX_TEST_DATABASE_URL.
TEMPLATE = "phalanx_template" + (
    f"_{os.environ['PYTEST_XDIST_WORKER']}" if "PYTEST_XDIST_WORKER" in os.environ else ""
)

LAYERS = ("unit", "integration", "e2e")

# Each xdist worker listens on ports of its own, below the kernel's ephemeral range (see
# shared/infra/local.py): its servers and stacks inherit the range through the environment.
if "PYTEST_XDIST_WORKER" in os.environ and local.PORT_RANGE_ENV not in os.environ:
    _worker = int(os.environ["PYTEST_XDIST_WORKER"].removeprefix("gw") or 0)
    if _worker < 6:  # 20000 + 6 * 2000 reaches the ephemeral ports (32768 and up)
        os.environ[local.PORT_RANGE_ENV] = f"{20000 + _worker * 2000}-{21999 + _worker * 2000}"


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
    if hasattr(config, "workerinput"):  # an xdist worker: it collects, the controller deals out
        items.sort(key=_longest_first)  # stable: the collection's order otherwise


# Under pytest-xdist with `--dist loadscope` (scripts/test.sh), what one worker runs together (a
# scope): the container tier's two files share its Docker engine (package fixtures); every other
# integration or e2e file keeps its module fixtures (a simulator, a stack of its own) on one worker,
# so they start once, not once per worker; unit tests are dealt out one by one. (xdist's own
# `loadgroup` cannot express this under pytest 9: the group suffix it writes to a test's id is lost.)
ONE_WORKER_PACKAGES = ("tests/e2e/containers/",)
# Started first, being the longest (figures in tests/README.md): a long file dealt out last would
# leave the other workers idle while it runs alone. xdist keeps the order with --no-loadscope-reorder.
LONGEST_FIRST = (
    "tests/e2e/containers/",
    "tests/e2e/test_quickstart.py",
)


def _longest_first(item: pytest.Item) -> int:
    return next(
        (i for i, prefix in enumerate(LONGEST_FIRST) if item.nodeid.startswith(prefix)), len(LONGEST_FIRST)
    )


def scope_of(nodeid: str) -> str:
    file = nodeid.split("::")[0]
    if file.startswith("tests/unit/"):
        return nodeid
    return next((package for package in ONE_WORKER_PACKAGES if file.startswith(package)), file)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's controller: with `--dist loadscope`, the scopes are those of `scope_of`."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByScope(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return ByScope(config, log)


# Summaries that xdist workers handed back (tests/e2e/containers/conftest.py): title -> lines.
WORKER_SUMMARIES: dict[str, list[str]] = {}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """xdist's controller, as a worker finishes: keep what it measured for the end of the run."""
    for title, lines in getattr(node, "workeroutput", {}).get("summaries", {}).items():
        WORKER_SUMMARIES.setdefault(title, []).extend(lines)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for title, lines in WORKER_SUMMARIES.items():
        terminalreporter.section(title)
        for line in lines:
            terminalreporter.write_line(line)


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


@pytest.fixture
async def migrated_engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """An engine on a new database with the schema at head, as its owner."""
    engine = create_async_engine(database_url)
    yield engine
    await engine.dispose()


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
