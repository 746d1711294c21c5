"""Composition root of the admission service: TLS, webhook registration, the HTTPS server.

`build` makes the webhook over the ports it is given (bus, store, Kubernetes API); `run` makes the
real ones, builds and serves.

The server serves the `TlsKeeper`'s SSL context; the keeper's task renews (or re-reads) the
certificates while the server runs and re-registers the webhooks when the CA bundle changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlparse

import uvicorn
from kubernetes_asyncio import client
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette

from services.admission.certs import Policy
from services.admission.context_loader import ContextLoader
from services.admission.registration import configurations, register
from services.admission.secret_store import SecretStore
from services.admission.server import build_app
from services.admission.settings import AdmissionSettings
from services.admission.tls import PublishBundle, Supplied, TlsKeeper
from shared.bus.nats import NatsBus
from shared.bus.ports import Bus
from shared.kube.client import make_api_client
from shared.runtime import Health
from shared.storage.engine import make_engine, make_sessions


def tls_keeper(settings: AdmissionSettings, api: client.ApiClient | None = None) -> TlsKeeper:
    """The keeper of the served TLS: supplied files, a Secret shared by replicas (needs `api`),
    or material of this process's own in cert_dir."""
    supplied = None
    if settings.cert_file and settings.key_file and settings.ca_file:
        supplied = Supplied(Path(settings.cert_file), Path(settings.key_file), Path(settings.ca_file))
    policy = Policy(
        cert_validity=timedelta(seconds=settings.cert_validity_seconds),
        ca_validity=timedelta(seconds=settings.ca_validity_seconds),
        renew_before=timedelta(seconds=settings.cert_renew_before_seconds),
    )
    shared = None
    if settings.cert_secret and api is not None:
        namespace = settings.cert_secret_namespace or settings.service_namespace
        shared = SecretStore(api, namespace, settings.cert_secret)
    return TlsKeeper(
        Path(settings.cert_dir),
        _hosts(settings),
        policy,
        supplied=supplied,
        shared=shared,
        check_every=timedelta(seconds=settings.cert_check_seconds),
    )


def _hosts(settings: AdmissionSettings) -> list[str]:
    hosts = [
        "localhost",
        "127.0.0.1",
        settings.service_name,
        f"{settings.service_name}.{settings.service_namespace}",
        f"{settings.service_name}.{settings.service_namespace}.svc",
    ]
    if settings.webhook_url:
        host = urlparse(settings.webhook_url).hostname
        if host and host not in hosts:
            hosts.insert(0, host)
    return hosts


def build(
    settings: AdmissionSettings, *, bus: Bus, store: AsyncEngine, kube: client.ApiClient | None
) -> Admission:
    """The webhook over the ports it is given: the review context from the store (and the API when
    there is one), each verdict audited on the bus. `kube` None: no Secret-shared TLS, no registration."""
    loader = ContextLoader(make_sessions(store), kube, scheduler_name=settings.scheduler_name)
    app = build_app(loader, bus.publish_raw_quick, max_request_bytes=settings.max_request_bytes)
    return Admission(settings, bus, kube, app)


async def run(settings: AdmissionSettings, health: Health) -> None:
    """Make the real ports (NATS, PostgreSQL, the Kubernetes API), build the webhook, serve it."""
    bus = await NatsBus.connect(settings.nats, name="phalanx-admission")
    engine = make_engine(settings.postgres)
    api = await make_api_client(settings.kubeconfig)
    try:
        await build(settings, bus=bus, store=engine, kube=api).run(health)
    finally:
        await api.close()
        await bus.close()
        await engine.dispose()


class Admission:
    """The built webhook: `app` answers AdmissionReviews; `run` serves it over TLS and keeps the
    certificates (and the webhook registrations) current."""

    def __init__(
        self,
        settings: AdmissionSettings,
        bus: Bus,
        kube: client.ApiClient | None,
        app: Starlette,
    ) -> None:
        self.settings = settings
        self.bus = bus
        self.kube = kube
        self.app = app

    async def run(self, health: Health) -> None:
        settings = self.settings
        await self.bus.ensure_streams()
        tls = tls_keeper(settings, self.kube)  # the certificates: read or made only when serving
        if tls.shares_material:
            await tls.sync_shared(None)  # registered below, once the server listens
        config = uvicorn.Config(
            self.app,
            host=settings.host,
            port=settings.port,
            ssl_context_factory=lambda _config, _default: tls.context,
            log_level="warning",
            access_log=False,
            timeout_keep_alive=settings.keep_alive_seconds,
            lifespan="off",
        )
        server = uvicorn.Server(config)
        # Stopping is run_service's job (it cancels us); uvicorn must not take the signals over.
        server.capture_signals = contextlib.nullcontext  # type: ignore[assignment]
        # Listen before registering: once the API server knows the webhook it calls it for every
        # Job, Queue and PodGroup, and a webhook that is not yet there fails those writes.
        sockets = [_reusable_socket(settings.host, settings.port)] if settings.reuse_port else None
        serving = asyncio.create_task(server.serve(sockets=sockets))
        while not server.started:
            if serving.done():
                await serving  # it failed to start: raise why
            await asyncio.sleep(0.02)
        publish = None
        if settings.register_webhooks and self.kube is not None:
            publish = _publisher(self.kube, settings)
            await publish(tls.ca_pem)
        rotating = asyncio.create_task(tls.run(publish))
        health.set_ready()
        try:
            await serving
        finally:
            server.should_exit = True
            rotating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await rotating


def _reusable_socket(host: str, port: int) -> socket.socket:
    """A listening socket other replicas on this host may bind too (SO_REUSEPORT): the kernel
    hands each new connection to one of them, and one that dies stops getting any."""
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    listener.bind((host, port))
    listener.listen(2048)
    listener.set_inheritable(True)
    return listener


def _publisher(api: client.ApiClient, settings: AdmissionSettings) -> PublishBundle:
    """Registers (or updates) the webhook configurations with a given CA bundle."""
    service = None if settings.webhook_url else (settings.service_name, settings.service_namespace, 443)

    async def publish(ca_pem: bytes) -> None:
        built = configurations(
            ca_pem=ca_pem, base_url=settings.webhook_url, service=service, timeout=settings.timeout_seconds
        )
        await register(api, built)

    return publish
