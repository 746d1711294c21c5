"""Readiness tells the truth about consumers (issue #28, item 5), on a real NATS JetStream server.

A consumer whose handler never completes, one that falls behind, and one that dead-letters
everything each turn the service's `/readyz` to 503 naming the consumer and the reason, set
`phalanx_bus_consumer_unhealthy{durable, reason}`, and (where the cause can go away within a
test) turn ready again once it has.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from prometheus_client import REGISTRY

from shared.bus.nats import NatsBus
from shared.config import NatsSettings
from shared.domain.errors import PermanentError
from shared.messages import subjects
from shared.messages.envelope import CloudEvent
from shared.runtime import Health, serve_health
from tests.contracts.bus import phase_event, spec
from tests.waiting import until

pytestmark = pytest.mark.integration
QUICK = {"health_every": 0.1}


@pytest.fixture
async def health_and_bus(nats_url: str) -> AsyncIterator[tuple[Health, NatsBus]]:
    bus = await NatsBus.connect(NatsSettings(url=nats_url), name="test")
    await bus.ensure_streams()
    health = Health()
    bus.health = health
    health.set_ready()
    yield health, bus
    await bus.close()


def unhealthy(durable: str, reason: str) -> float | None:
    return REGISTRY.get_sample_value("phalanx_bus_consumer_unhealthy", {"durable": durable, "reason": reason})


async def readyz(port: int) -> tuple[str, str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
    response = (await reader.read()).decode()
    writer.close()
    head, _, body = response.partition("\r\n\r\n")
    return head.splitlines()[0], body


def hold_until(release: asyncio.Event) -> Callable[[CloudEvent[object]], Awaitable[None]]:
    """A handler that completes only once `release` is set."""

    async def handler(event: CloudEvent[object]) -> None:
        await release.wait()

    return handler


async def publish(bus: NatsBus, count: int, prefix: str) -> None:
    for index in range(count):
        name = f"{prefix}-{index}"
        await bus.publish(subjects.job_event("phase", "default", name), phase_event(name, "Running"))


async def test_a_consumer_whose_handler_never_completes_is_not_ready_until_it_does(
    health_and_bus: tuple[Health, NatsBus],
) -> None:
    health, bus = health_and_bus
    release = asyncio.Event()
    hangs = hold_until(release)
    server = await serve_health(health, 0)
    port = server.sockets[0].getsockname()[1]
    try:
        bus.consume(spec("hangs", stuck_after=0.5, **QUICK), hangs)
        await publish(bus, 1, "hang")
        await until(lambda: not health.ready, within=20)
        status, body = await readyz(port)
        assert status.endswith("503 Service Unavailable")
        assert "consumer hangs stuck: 1 message(s) in progress and none finished" in body
        assert unhealthy("hangs", "stuck") == 1.0
        assert unhealthy("hangs", "lagging") == 0.0

        release.set()
        await until(lambda: health.ready, within=20)
        status, body = await readyz(port)
        assert status.endswith("200 OK")
        assert unhealthy("hangs", "stuck") == 0.0
    finally:
        server.close()


async def test_a_consumer_that_falls_behind_is_not_ready_while_it_lags(
    health_and_bus: tuple[Health, NatsBus],
) -> None:
    health, bus = health_and_bus
    release = asyncio.Event()
    slow = hold_until(release)
    # One message at a time: the rest wait on the server, which is what lag is.
    bus.consume(spec("slow", max_lag=5, in_flight=1, batch=1, **QUICK), slow)
    await publish(bus, 20, "lag")
    await until(lambda: not health.ready, within=20)
    assert "consumer slow lagging:" in health.detail
    assert "(limit 5)" in health.detail
    assert unhealthy("slow", "lagging") == 1.0

    release.set()
    await until(lambda: health.ready, within=30)
    assert unhealthy("slow", "lagging") == 0.0


async def test_a_consumer_dead_lettering_in_a_loop_is_not_ready_until_the_loop_ends(
    health_and_bus: tuple[Health, NatsBus],
) -> None:
    health, bus = health_and_bus

    async def refuses(event: CloudEvent[object]) -> None:
        raise PermanentError("every message is refused")

    bus.consume(spec("refuses", dead_letter_loop=3, dead_letter_window=3.0, **QUICK), refuses)
    await publish(bus, 5, "dlq")
    await until(lambda: not health.ready, within=20)
    assert "consumer refuses dead_lettering:" in health.detail
    # The health check may first look while the last of the five is still being refused.
    message = "consumer refuses dead_lettering: 5 messages dead-lettered in 3 s"
    await until(lambda: message in health.detail, message, within=20)
    assert unhealthy("refuses", "dead_lettering") == 1.0
    # Nothing more fails: once the window has passed the consumer is ready again.
    await until(lambda: health.ready, within=20)
    assert unhealthy("refuses", "dead_lettering") == 0.0


async def test_a_healthy_consumer_keeps_the_service_ready(health_and_bus: tuple[Health, NatsBus]) -> None:
    health, bus = health_and_bus
    seen: list[str] = []

    async def handles(event: CloudEvent[object]) -> None:
        seen.append(event.id)

    bus.consume(spec("handles", stuck_after=0.5, max_lag=50, dead_letter_loop=3, **QUICK), handles)
    await publish(bus, 30, "ok")
    await until(lambda: len(seen) == 30)
    await asyncio.sleep(1.0)  # several assessments after the work
    assert health.ready
    assert all(unhealthy("handles", reason) == 0.0 for reason in ("stuck", "lagging", "dead_lettering"))


async def test_work_reaching_a_long_idle_consumer_is_not_mistaken_for_a_stuck_one(
    health_and_bus: tuple[Health, NatsBus],
) -> None:
    health, bus = health_and_bus
    seen: list[str] = []
    readiness: list[bool] = []

    async def brief(event: CloudEvent[object]) -> None:
        await asyncio.sleep(0.3)
        seen.append(event.id)

    bus.consume(spec("idle", stuck_after=2.0, **QUICK), brief)
    await asyncio.sleep(3.0)  # idle far longer than stuck_after: nothing had finished meanwhile
    await publish(bus, 1, "wake")

    def woken() -> list[str]:
        readiness.append(health.ready)  # sampled all the while the consumer works
        return seen

    await until(woken, "the idle consumer handling the wake-up", within=20)
    assert all(readiness)
    assert unhealthy("idle", "stuck") == 0.0
