"""Running a service: health and metrics over HTTP, signals, and an orderly stop.

Each service's `__main__` calls `run_service(name, settings, main)`. `main` receives a `Health`
whose `ready` flag drives `/readyz`; `/healthz` answers while the process runs; `/metrics` serves
Prometheus text. Tracing is switched on here when an OTLP endpoint is configured (shared/tracing.py).
SIGTERM or SIGINT cancels `main`, which closes its connections on the way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable

import structlog
from prometheus_client import CONTENT_TYPE_LATEST

from shared import tracing
from shared.metrics import exposition

log = structlog.get_logger()


class Health:
    """Ready once the service says so (`set_ready`), and while no check reports a problem.

    The service's own start-up sets the base state; checks that run beside it (each NATS
    consumer's, see shared/bus/consumer_health.py) `report` a problem under their name and clear
    it with None. `/readyz` names every problem reported.
    """

    def __init__(self) -> None:
        self._started = False
        self._detail = "starting"
        self._problems: dict[str, str] = {}

    @property
    def ready(self) -> bool:
        return self._started and not self._problems

    @property
    def detail(self) -> str:
        return "; ".join(self._problems.values()) if self._problems else self._detail

    def set_ready(self, detail: str = "ready") -> None:
        self._started, self._detail = True, detail

    def set_not_ready(self, detail: str) -> None:
        self._started, self._detail = False, detail

    def report(self, check: str, problem: str | None) -> None:
        if problem is None:
            self._problems.pop(check, None)
        else:
            self._problems[check] = problem


async def serve_health(health: Health, port: int, host: str = "127.0.0.1") -> asyncio.Server:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = (await reader.readline()).decode(errors="replace")
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass
            path = request_line.split(" ")[1] if " " in request_line else "/"
            status, body, content_type = _route(health, path)
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        finally:
            writer.close()

    return await asyncio.start_server(handle, host, port)


def _route(health: Health, path: str) -> tuple[str, bytes, str]:
    if path.startswith("/healthz"):
        return "200 OK", b"ok\n", "text/plain"
    if path.startswith("/readyz"):
        status = "200 OK" if health.ready else "503 Service Unavailable"
        return status, f"{health.detail}\n".encode(), "text/plain"
    if path.startswith("/metrics"):
        return "200 OK", exposition(), CONTENT_TYPE_LATEST
    return "404 Not Found", b"not found\n", "text/plain"


def run_service(
    name: str, health_port: int, main: Callable[[Health], Awaitable[None]], *, health_host: str = "127.0.0.1"
) -> None:
    """Run `main` until it returns or a stop signal arrives; health on `health_host:health_port`."""

    async def runner() -> None:
        health = Health()
        tracing.configure(name.removeprefix("phalanx-"))
        server = await serve_health(health, health_port, health_host) if health_port else None
        task = asyncio.ensure_future(main(health))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)
        log.info("started", service=name, health_host=health_host, health_port=health_port)
        try:
            await task
        except asyncio.CancelledError:
            log.info("stopping", service=name)
        finally:
            tracing.shutdown()
            if server:
                server.close()
                with contextlib.suppress(Exception):
                    await server.wait_closed()

    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(runner())
