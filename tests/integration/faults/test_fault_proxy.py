"""The TCP fault proxy does what each mode says, and a real PostgreSQL client behind it survives
a half-open link: its statement is bounded by the client-side timeout, not the link, and it works
again once the link does.

The first tests use an echo server on loopback, so each mode's effect is seen byte for byte.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from phalanx.chaos.proxy import FaultProxy
from shared.bus.nats import NatsBus
from shared.bus.ports import ConsumerSpec
from shared.config import NatsSettings, PostgresSettings
from shared.messages import jobs, subjects
from shared.messages.envelope import CloudEvent, new_event
from shared.storage.engine import make_engine
from tests.waiting import until

pytestmark = pytest.mark.integration


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(1024):
        writer.write(data)
        await writer.drain()
    writer.close()


@pytest.fixture
async def proxy() -> AsyncIterator[FaultProxy]:
    server = await asyncio.start_server(_echo, "127.0.0.1", 0)
    async with FaultProxy("127.0.0.1", server.sockets[0].getsockname()[1]) as proxy:
        yield proxy
    server.close()


async def _round_trip(port: int, payload: bytes = b"ping", timeout: float = 2.0) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(payload)
        await writer.drain()
        return await asyncio.wait_for(reader.read(1024), timeout)
    finally:
        writer.close()


async def test_pass_and_delay_forward_the_bytes_delay_only_later(proxy: FaultProxy) -> None:
    assert await _round_trip(proxy.port) == b"ping"
    proxy.set_mode("delay", delay_s=0.3)
    started = time.monotonic()
    assert await _round_trip(proxy.port) == b"ping"
    assert time.monotonic() - started >= 0.6  # delayed on the way there and on the way back


async def test_blackhole_answers_nothing_and_keeps_the_connection_open(proxy: FaultProxy) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(b"before")
    assert await asyncio.wait_for(reader.read(1024), 2) == b"before"
    proxy.set_mode("blackhole")
    writer.write(b"lost")
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(reader.read(1024), 0.5)
    assert not reader.at_eof()
    with pytest.raises(TimeoutError):
        await _round_trip(proxy.port, timeout=0.5)  # a new connection is accepted, then silence
    writer.close()


async def test_reset_aborts_open_and_new_connections(proxy: FaultProxy) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(b"x")
    await asyncio.wait_for(reader.read(1024), 2)
    proxy.set_mode("reset")
    with pytest.raises(ConnectionResetError):
        await asyncio.wait_for(reader.read(1024), 2)
    writer.close()
    with pytest.raises(ConnectionResetError):
        await _round_trip(proxy.port)


async def test_drop_closes_connections_and_pass_lets_new_ones_through(proxy: FaultProxy) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(b"x")
    await asyncio.wait_for(reader.read(1024), 2)
    proxy.set_mode("drop")
    assert await asyncio.wait_for(reader.read(1024), 2) == b""
    writer.close()  # our end of the dropped connection
    fresh, fresh_writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    assert await asyncio.wait_for(fresh.read(1024), 2) == b""  # closed on arrival
    fresh_writer.close()
    proxy.set_mode("pass")
    assert await _round_trip(proxy.port) == b"ping"


def test_a_mode_that_does_not_exist_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="mode must be one of"):
        FaultProxy("127.0.0.1", 1).set_mode("slow")  # type: ignore[arg-type]


def _through(url: str, proxy: FaultProxy) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.port}", f":{proxy.port}")))


@contextlib.asynccontextmanager
async def bus_behind_proxy(nats_url: str, name: str) -> AsyncIterator[tuple[FaultProxy, NatsBus]]:
    """A bus connected as `name` through a fault proxy in front of the NATS server at `nats_url`."""
    upstream = urlsplit(nats_url)
    async with FaultProxy(upstream.hostname or "127.0.0.1", upstream.port or 4222) as proxy:
        behind = await NatsBus.connect(NatsSettings(url=_through(nats_url, proxy)), name=name)
        try:
            yield proxy, behind
        finally:
            proxy.set_mode("pass")
            await behind.close()


def _phase(name: str) -> CloudEvent[jobs.JobPhaseChanged]:
    data = jobs.JobPhaseChanged(
        namespace="default", name=name, uid=f"uid-{name}", previous=None, phase="Running"
    )
    return new_event(data, source="test")


async def test_a_consumer_whose_nats_link_is_reset_reconnects_and_misses_nothing(
    bus: NatsBus, nats_url: str
) -> None:
    async with bus_behind_proxy(nats_url, "phalanx-controller") as (proxy, behind):
        seen: list[str] = []

        async def handle(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
            seen.append(event.data.name)

        behind.consume(ConsumerSpec(subjects.JOBS_STREAM, "behind-proxy", ["jobs.>"]), handle)
        await bus.publish(subjects.job_event("phase", "default", "before"), _phase("before"))
        await until(lambda: seen == ["before"], within=20)
        proxy.set_mode("reset")
        await bus.publish(subjects.job_event("phase", "default", "during"), _phase("during"))
        await asyncio.sleep(1.0)
        assert seen == ["before"]  # nothing gets through a reset link
        proxy.set_mode("pass")
        await until(lambda: "during" in seen, within=30)
        assert seen.count("during") == 1


async def test_a_postgres_statement_over_a_blackholed_link_fails_in_bounded_time_then_recovers(
    database_url: str,
) -> None:
    upstream = urlsplit(database_url)
    async with FaultProxy(upstream.hostname or "127.0.0.1", upstream.port or 5432) as proxy:
        proxied = urlunsplit(
            upstream._replace(netloc=upstream.netloc.replace(f":{upstream.port}", f":{proxy.port}"))
        )
        engine = make_engine(
            PostgresSettings(url=proxied, statement_timeout_seconds=1, connect_timeout_seconds=1)
        )
        try:
            async with engine.connect() as connection:
                assert (await connection.execute(text("SELECT 1"))).scalar() == 1
            proxy.set_mode("blackhole")
            started = time.monotonic()
            with pytest.raises((DBAPIError, TimeoutError, OSError)):
                async with engine.connect() as connection:
                    await connection.execute(text("SELECT 1"))
            assert time.monotonic() - started < 30, "bounded by the client's timeouts, not the link"
            proxy.set_mode("pass")
            async with engine.connect() as connection:
                assert (await connection.execute(text("SELECT 2"))).scalar() == 2
        finally:
            await engine.dispose()
