"""reliability.md §6.2 T10, through a failpoint: the outbox relay fails after publishing and before
marking the rows sent; the next pass publishes them again, and the stream holds each message once
(its Nats-Msg-Id inside the duplicate window). Real NATS JetStream and PostgreSQL.
"""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from shared import failpoints
from shared.bus.nats import NatsBus
from shared.messages import jobs, subjects
from shared.messages.envelope import new_event
from shared.storage import outbox, tables
from shared.storage.engine import make_sessions

pytestmark = pytest.mark.integration


async def test_a_relay_failing_between_publish_and_mark_publishes_each_message_once(
    engine: AsyncEngine, bus: NatsBus, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(failpoints.ENV, "relay.after_publish_before_mark=error:1")
    monkeypatch.setattr(failpoints, "_points", None)
    sessions = make_sessions(engine)
    async with sessions() as session, session.begin():
        for i in range(5):
            data = jobs.JobPhaseChanged(
                namespace="default", name=f"j{i}", uid=f"u{i}", previous=None, phase="Running"
            )
            outbox.enqueue(
                session,
                tables.ControllerOutbox,
                subjects.job_event("phase", "default", f"j{i}"),
                new_event(data, source="test"),
            )
    relay = outbox.OutboxRelay(sessions, tables.ControllerOutbox, bus)

    with pytest.raises(failpoints.FailpointError):
        await relay.relay_once()  # published, then failed before marking the rows
    assert await relay.relay_once() == 5  # the next pass publishes them again

    assert (await bus.js.stream_info(subjects.JOBS_STREAM)).state.messages == 5
    async with engine.connect() as connection:
        unsent = (
            await connection.execute(
                select(func.count())
                .select_from(tables.ControllerOutbox)
                .where(tables.ControllerOutbox.published_at.is_(None))
            )
        ).scalar_one()
    assert unsent == 0
