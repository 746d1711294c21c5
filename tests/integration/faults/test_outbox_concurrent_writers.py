"""reliability.md §6.3 T17: the outbox skips no row committed late under concurrent writers.

Four writers add outbox rows side by side while one transaction, holding the lowest id, stays
open for two seconds; the relay runs throughout. A relay that kept a cursor ("published up to
id N") would pass the open row's id while it was invisible and never come back for it. Every
committed row must reach the stream, exactly once by its Nats-Msg-Id. Real NATS and PostgreSQL.
"""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from shared.bus.nats import NatsBus
from shared.messages import jobs, subjects
from shared.messages.envelope import new_event
from shared.storage import outbox, tables
from shared.storage.engine import make_sessions
from tests.waiting import until

pytestmark = pytest.mark.integration
WRITERS = 4
ROWS_EACH = 10


def phase_event(name: str) -> tuple[str, str, object]:
    data = jobs.JobPhaseChanged(
        namespace="default", name=name, uid=f"uid-{name}", previous=None, phase="Running"
    )
    event = new_event(data, source="test")
    return subjects.job_event("phase", "default", name), event.id, event


@pytest.mark.timeout(60)
async def test_a_row_committed_after_later_ids_were_relayed_is_still_published(
    engine: AsyncEngine, bus: NatsBus
) -> None:
    sessions = make_sessions(engine)
    relay = outbox.OutboxRelay(sessions, tables.ControllerOutbox, bus, poll_seconds=0.05)
    committed: list[str] = []
    held_open = asyncio.Event()

    async def slow_writer() -> None:
        # Takes its id first, then keeps its transaction open while the others commit after it.
        subject, msg_id, event = phase_event("slow")
        async with sessions() as session, session.begin():
            outbox.enqueue(session, tables.ControllerOutbox, subject, event)  # type: ignore[arg-type]
            await session.flush()
            held_open.set()
            await asyncio.sleep(2.0)
        committed.append(msg_id)

    async def writer(index: int) -> None:
        await held_open.wait()
        for row in range(ROWS_EACH):
            subject, msg_id, event = phase_event(f"w{index}-{row}")
            async with sessions() as session, session.begin():
                outbox.enqueue(session, tables.ControllerOutbox, subject, event)  # type: ignore[arg-type]
            committed.append(msg_id)
            await asyncio.sleep(0.02)

    relaying = asyncio.create_task(relay.run())
    try:
        await asyncio.gather(slow_writer(), *(writer(i) for i in range(WRITERS)))
        await until(lambda: relay.published >= len(committed), "the relay keeping up with the writers")
    finally:
        relaying.cancel()
        await asyncio.gather(relaying, return_exceptions=True)

    state = (await bus.js.stream_info(subjects.JOBS_STREAM)).state
    stored = [
        await bus.js.get_msg(subjects.JOBS_STREAM, seq) for seq in range(state.first_seq, state.last_seq + 1)
    ]
    published = [(m.headers or {}).get("Nats-Msg-Id", "") for m in stored]
    assert len(committed) == 1 + WRITERS * ROWS_EACH
    assert sorted(published) == sorted(committed), "every committed row published, once"
