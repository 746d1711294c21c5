"""Found by `phalanx chaos`: after PostgreSQL restarted, admission's next review failed with
"connection is closed" (an HTTP 500 from the webhook, so the API server refused a valid create).

A pooled connection that died with the server is now thrown away and the read tried once on a
new one; a database that still cannot be reached refuses the review as unavailable (503, "try
again") instead of failing the call. The link to a real PostgreSQL is broken with the fault proxy.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from phalanx.chaos.proxy import FaultProxy
from services.admission import context_loader
from services.admission.context_loader import ContextLoader, ContextUnavailable
from shared.config import PostgresSettings
from shared.storage.engine import make_engine, make_sessions
from tests.integration.faults.test_fault_proxy import _through

pytestmark = pytest.mark.integration
REVIEW: dict[str, Any] = {"request": {"uid": "u1", "operation": "CREATE", "kind": {"kind": "ConfigMap"}}}


@pytest.fixture
async def proxied_loader(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[FaultProxy, ContextLoader]]:
    monkeypatch.setattr(context_loader, "CACHE_SECONDS", 0.0)  # every review reads the database
    upstream = urlsplit(database_url)
    async with FaultProxy(upstream.hostname or "127.0.0.1", upstream.port or 5432) as proxy:
        engine = make_engine(PostgresSettings(url=_through(database_url, proxy), connect_timeout_seconds=2))
        try:
            yield proxy, ContextLoader(make_sessions(engine), None, scheduler_name="volcano")
        finally:
            await engine.dispose()


async def test_the_first_review_after_the_database_dropped_its_connections_is_answered(
    proxied_loader: tuple[FaultProxy, ContextLoader],
) -> None:
    proxy, loader = proxied_loader
    await loader.load(REVIEW)  # the pool now holds a connection
    proxy.set_mode("reset")  # the server went away with it ...
    proxy.set_mode("pass")  # ... and is back
    context = await loader.load(REVIEW)
    assert context.scheduler_name == "volcano"


async def test_a_database_that_cannot_be_reached_refuses_the_review_as_unavailable(
    proxied_loader: tuple[FaultProxy, ContextLoader],
) -> None:
    proxy, loader = proxied_loader
    await loader.load(REVIEW)
    proxy.set_mode("drop")
    with pytest.raises(ContextUnavailable, match="database"):
        await loader.load(REVIEW)
