"""Composition root of the console: the read model, the cluster reader, the audit feed and the web server.

Ready once the database answers and the audit stream is subscribed. uvicorn serves the FastAPI app
inside the service's own event loop; stopping is `run_service`'s signal handling, not uvicorn's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from datetime import timedelta

import structlog
import uvicorn

from services.console.audit_feed import AuditFeed
from services.console.cluster import ClusterReader
from services.console.read_model import ReadModel
from services.console.settings import ConsoleSettings
from services.console.web import create_app
from shared.kube.client import make_api_client
from shared.runtime import Health
from shared.storage.engine import make_engine

log = structlog.get_logger()


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: the service's runner cancels us on SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def install_signal_handlers(self) -> None:
        return None


async def run(settings: ConsoleSettings, health: Health) -> None:
    engine = make_engine(settings.postgres)
    api = await make_api_client(settings.kubeconfig)
    feed = AuditFeed(
        settings.nats,
        history=timedelta(hours=settings.audit_history_hours),
        keep=settings.audit_buffer_events,
    )
    token = settings.token.get_secret_value() if settings.token else None
    web = create_app(ReadModel(engine), ClusterReader(api), feed, token=token)
    server = _Server(
        uvicorn.Config(web, host=settings.host, port=settings.port, log_level="warning", access_log=False)
    )
    feeding = asyncio.create_task(feed.run())
    serving = asyncio.create_task(server.serve())
    try:
        await ReadModel(engine).ping()
        await asyncio.wait(
            {feeding, asyncio.create_task(feed.connected.wait())}, return_when="FIRST_COMPLETED"
        )
        if feeding.done():
            feeding.result()  # the audit stream could not be read: say why
        while not server.started:
            if serving.done():
                serving.result()
            await asyncio.sleep(0.05)
        log.info("console listening", url=f"http://{settings.host}:{settings.port}")
        health.set_ready()
        await asyncio.gather(feeding, serving)
    finally:
        server.should_exit = True
        feeding.cancel()
        await asyncio.gather(feeding, serving, return_exceptions=True)
        await api.close()
        await engine.dispose()
