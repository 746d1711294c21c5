"""Composition root of the console: the read model, the cluster reader, the audit feed and the web server.

`build` makes the parts over the store and Kubernetes client it is given; `run` makes the real ones.
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
from fastapi import FastAPI
from kubernetes_asyncio import client
from sqlalchemy.ext.asyncio import AsyncEngine

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


def build(settings: ConsoleSettings, *, store: AsyncEngine, kube: client.ApiClient) -> Console:
    """The console over the ports it is given. Its audit feed reads the audit stream from a point in
    time with a consumer of its own (audit_feed.py), not through the `Bus` port."""
    feed = AuditFeed(
        settings.nats,
        history=timedelta(hours=settings.audit_history_hours),
        keep=settings.audit_buffer_events,
    )
    token = settings.token.get_secret_value() if settings.token else None
    model = ReadModel(store)
    web = create_app(model, ClusterReader(kube), feed, token=token)
    return Console(settings, model, feed, web)


async def run(settings: ConsoleSettings, health: Health) -> None:
    """Make the real ports (PostgreSQL, the Kubernetes API), build the console, serve it."""
    engine = make_engine(settings.postgres)
    api = await make_api_client(settings.kubeconfig)
    try:
        await build(settings, store=engine, kube=api).run(health)
    finally:
        await api.close()
        await engine.dispose()


class Console:
    """The built console: `web` is the app; `run` follows the audit stream and serves `web`."""

    def __init__(self, settings: ConsoleSettings, model: ReadModel, feed: AuditFeed, web: FastAPI) -> None:
        self.settings = settings
        self.model = model
        self.feed = feed
        self.web = web

    async def run(self, health: Health) -> None:
        settings, feed = self.settings, self.feed
        server = _Server(
            uvicorn.Config(
                self.web, host=settings.host, port=settings.port, log_level="warning", access_log=False
            )
        )
        feeding = asyncio.create_task(feed.run())
        serving = asyncio.create_task(server.serve())
        try:
            await self.model.ping()
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
