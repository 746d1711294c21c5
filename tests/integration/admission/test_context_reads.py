"""What one review costs admission in database reads (issue #15: 6.5 ms of admission CPU per pod
in S1, a fifth of it in reads of the same context).

A burst of reviews that find the cached context expired share one read; a Pod's review, whose
rule needs only the scheduler's name, reads nothing. The reads are counted on a real PostgreSQL
as the engine sends them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from services.admission.context_loader import ContextLoader
from shared.config import PostgresSettings
from shared.storage.engine import make_engine, make_sessions

pytestmark = pytest.mark.integration


def review(kind: str) -> dict[str, Any]:
    obj = {"metadata": {"name": "x", "namespace": "default"}, "spec": {}}
    return {"request": {"uid": "u1", "operation": "CREATE", "kind": {"kind": kind}, "object": obj}}


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(PostgresSettings(url=database_url))
    try:
        yield engine
    finally:
        await engine.dispose()


def counted(engine: AsyncEngine) -> list[str]:
    statements: list[str] = []
    event.listen(engine.sync_engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    return statements


async def test_a_burst_of_reviews_shares_one_read_of_the_context(engine: AsyncEngine) -> None:
    statements = counted(engine)
    loader = ContextLoader(make_sessions(engine), None, scheduler_name="volcano")
    contexts = await asyncio.gather(*(loader.load(review("ConfigMap")) for _ in range(20)))
    assert len({id(context) for context in contexts}) == 1
    assert len(statements) == 3  # queues, priority classes, PodGroups per queue: once


async def test_a_pods_review_reads_no_database(engine: AsyncEngine) -> None:
    statements = counted(engine)
    loader = ContextLoader(make_sessions(engine), None, scheduler_name="my-scheduler")
    context = await loader.load(review("Pod"))
    assert context.scheduler_name == "my-scheduler"
    assert statements == []
