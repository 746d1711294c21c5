"""The outbox relay on real PostgreSQL and NATS JetStream: what a transaction commits reaches the
stream once, in commit order, after the commit and never before; what it rolls back never does; and
a relay kicked after a commit publishes at once, two relays side by side share the rows, and a
relay that dies between publishing and marking leaves nothing lost or doubled to the next one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from shared import failpoints
from shared.bus.nats import NatsBus
from shared.config import NatsSettings
from shared.messages import jobs, subjects
from shared.messages.envelope import new_event
from shared.storage import outbox, tables
from shared.storage.engine import make_sessions
from tests.waiting import until

pytestmark = pytest.mark.integration


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(database_url)
    yield engine
    await engine.dispose()


async def enqueue(engine: AsyncEngine, names: list[str], *, commit: bool = True) -> None:
    sessions = make_sessions(engine)
    async with sessions() as session, session.begin():
        for name in names:
            data = jobs.JobPhaseChanged(
                namespace="default", name=name, uid=f"u-{name}", previous=None, phase="Running"
            )
            outbox.enqueue(
                session,
                tables.ControllerOutbox,
                subjects.job_event("phase", "default", name),
                new_event(data, source="test"),
            )
        if not commit:
            await session.rollback()


async def published(bus: NatsBus) -> list[str]:
    """The job names on the JOBS stream, in stream order."""
    count = (await bus.js.stream_info(subjects.JOBS_STREAM)).state.messages
    names = []
    for sequence in range(1, count + 1):
        message = await bus.js.get_msg(subjects.JOBS_STREAM, sequence)
        names.append(subjects.unescape_token(message.subject.split(".")[-1]))
    return names


async def test_committed_rows_are_published_once_in_commit_order_and_rolled_back_ones_never(
    engine: AsyncEngine, bus: NatsBus
) -> None:
    relay = outbox.OutboxRelay(make_sessions(engine), tables.ControllerOutbox, bus)
    assert await relay.relay_once() == 0
    await enqueue(engine, ["a", "b"])
    await enqueue(engine, ["never"], commit=False)
    await enqueue(engine, ["c"])

    assert await relay.relay_once() == 3
    assert await relay.relay_once() == 0  # marked published: a second pass sends nothing
    assert await published(bus) == ["a", "b", "c"]


async def test_a_running_relay_publishes_at_once_when_kicked(engine: AsyncEngine, bus: NatsBus) -> None:
    # A poll period far longer than the wait below: only the kick can explain a prompt publish.
    relay = outbox.OutboxRelay(make_sessions(engine), tables.ControllerOutbox, bus, poll_seconds=60)
    running = asyncio.create_task(relay.run())
    try:
        await asyncio.sleep(0.5)  # the relay's first pass finds nothing, then waits up to 60 s for a kick
        await enqueue(engine, ["kicked"])
        relay.kick()
        await until(lambda: relay.published == 1, "the kicked relay to publish", within=5)
    finally:
        running.cancel()
    assert await published(bus) == ["kicked"]


async def test_two_relays_side_by_side_publish_every_row_once(engine: AsyncEngine, bus: NatsBus) -> None:
    names = [f"j{i:03d}" for i in range(200)]
    await enqueue(engine, names)
    sessions = make_sessions(engine)
    first, second = (outbox.OutboxRelay(sessions, tables.ControllerOutbox, bus, batch=20) for _ in range(2))

    async def drain(relay: outbox.OutboxRelay) -> None:
        while await relay.relay_once():
            pass

    await asyncio.gather(drain(first), drain(second))
    # Counted by the relays, not the stream: JetStream would drop a duplicate by its Nats-Msg-Id.
    assert first.published + second.published == len(names)
    assert sorted(await published(bus)) == names


async def test_rows_are_published_once_across_a_relay_that_dies_and_one_that_starts(
    engine: AsyncEngine, bus: NatsBus, nats_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first relay dies after publishing and before marking (the process killed there); a new
    relay, on a connection of its own, publishes what it left and what was written meanwhile."""
    monkeypatch.setenv(failpoints.ENV, "relay.after_publish_before_mark=error:1")
    monkeypatch.setattr(failpoints, "_points", None)
    await enqueue(engine, ["a", "b"])
    dying = outbox.OutboxRelay(make_sessions(engine), tables.ControllerOutbox, bus)
    with pytest.raises(failpoints.FailpointError):
        await dying.relay_once()
    await enqueue(engine, ["c"])  # written while no relay runs

    restarted = await NatsBus.connect(NatsSettings(url=nats_url), name="phalanx-controller")
    relay = outbox.OutboxRelay(make_sessions(engine), tables.ControllerOutbox, restarted)
    running = asyncio.create_task(relay.run())
    try:
        await until(lambda: relay.published == 3, "the new relay to publish every row")
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await restarted.close()
    assert await published(bus) == ["a", "b", "c"]
    assert await relay.measure() == (0, 0.0)
