"""Composition root of the admission service: TLS, webhook registration, the HTTPS server.

The server serves the `TlsKeeper`'s SSL context; the keeper's task renews (or re-reads) the
certificates while the server runs and re-registers the webhooks when the CA bundle changes.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlparse

import uvicorn
from kubernetes_asyncio import client

from services.admission.certs import Policy
from services.admission.context_loader import ContextLoader
from services.admission.registration import configurations, register
from services.admission.server import build_app
from services.admission.settings import AdmissionSettings
from services.admission.tls import PublishBundle, Supplied, TlsKeeper
from shared.bus.nats import Bus
from shared.kube.client import make_api_client
from shared.runtime import Health
from shared.storage.engine import make_engine, make_sessions


def tls_keeper(settings: AdmissionSettings) -> TlsKeeper:
    supplied = None
    if settings.cert_file and settings.key_file and settings.ca_file:
        supplied = Supplied(Path(settings.cert_file), Path(settings.key_file), Path(settings.ca_file))
    policy = Policy(
        cert_validity=timedelta(seconds=settings.cert_validity_seconds),
        ca_validity=timedelta(seconds=settings.ca_validity_seconds),
        renew_before=timedelta(seconds=settings.cert_renew_before_seconds),
    )
    return TlsKeeper(
        Path(settings.cert_dir),
        _hosts(settings),
        policy,
        supplied=supplied,
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


async def run(settings: AdmissionSettings, health: Health) -> None:
    bus = await Bus.connect(settings.nats, name="phalanx-admission")
    engine = make_engine(settings.postgres)
    api = await make_api_client(settings.kubeconfig)
    try:
        await bus.ensure_streams()
        tls = tls_keeper(settings)
        loader = ContextLoader(make_sessions(engine), api, scheduler_name=settings.scheduler_name)
        app = build_app(loader, bus.publish_raw_quick, max_request_bytes=settings.max_request_bytes)
        config = uvicorn.Config(
            app,
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
        serving = asyncio.create_task(server.serve())
        while not server.started:
            if serving.done():
                await serving  # it failed to start: raise why
            await asyncio.sleep(0.02)
        publish = None
        if settings.register_webhooks:
            publish = _publisher(api, settings)
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
    finally:
        await api.close()
        await bus.close()
        await engine.dispose()


def _publisher(api: client.ApiClient, settings: AdmissionSettings) -> PublishBundle:
    """Registers (or updates) the webhook configurations with a given CA bundle."""
    service = None if settings.webhook_url else (settings.service_name, settings.service_namespace, 443)

    async def publish(ca_pem: bytes) -> None:
        built = configurations(
            ca_pem=ca_pem, base_url=settings.webhook_url, service=service, timeout=settings.timeout_seconds
        )
        await register(api, built)

    return publish
