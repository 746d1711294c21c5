"""A PostgreSQL with replicas, given as several hosts: the services' engine connects to the one
that accepts writes, past hosts that are down (docs/scaling.md: external NATS and PostgreSQL).

The URL lists the hosts as libpq does (`?host=a:5432&host=b:5432&target_session_attrs=read-write`);
here the first is a port nobody listens on (a replica being replaced) and the second the real
server, which is a primary (not in recovery) and so takes the session.
"""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from shared.config import PostgresSettings
from shared.infra import local
from shared.storage.engine import make_engine

pytestmark = pytest.mark.integration


async def test_an_engine_given_several_hosts_writes_through_the_one_that_accepts_writes(
    database_url: str,
) -> None:
    url = make_url(database_url)
    down = local.free_port()
    several = url.set(
        host=None,
        port=None,
        query={
            "host": [f"127.0.0.1:{down}", f"{url.host}:{url.port}"],
            "target_session_attrs": "read-write",
        },
    ).render_as_string(hide_password=False)
    engine = make_engine(PostgresSettings(url=several))
    try:
        async with engine.begin() as connection:
            await connection.execute(text("CREATE TABLE written (n int)"))
            await connection.execute(text("INSERT INTO written VALUES (1)"))
            in_recovery = (await connection.execute(text("SELECT pg_is_in_recovery()"))).scalar_one()
    finally:
        await engine.dispose()
    assert in_recovery is False
    # The row is on the server that answers at the URL's own host and port (the server's own view
    # of its port differs behind a container's port mapping, so the row is what tells).
    direct = make_engine(PostgresSettings(url=database_url))
    try:
        async with direct.connect() as connection:
            assert (await connection.execute(text("SELECT n FROM written"))).scalar_one() == 1
    finally:
        await direct.dispose()
