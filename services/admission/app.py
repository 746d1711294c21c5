"""Composition root of the admission service: TLS, webhook registration, the HTTPS server."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from urllib.parse import urlparse

import uvicorn

from services.admission.certs import TlsFiles, ensure_certificates
from services.admission.context_loader import ContextLoader
from services.admission.registration import configurations, register
from services.admission.server import build_app
from services.admission.settings import AdmissionSettings
from shared.bus.nats import Bus
from shared.kube.client import make_api_client
from shared.runtime import Health
from shared.storage.engine import make_engine, make_sessions


def tls_files(settings: AdmissionSettings) -> TlsFiles:
    if settings.cert_file and settings.key_file and settings.ca_file:
        return TlsFiles(Path(settings.cert_file), Path(settings.key_file), Path(settings.ca_file))
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
    return ensure_certificates(Path(settings.cert_dir), hosts)


async def run(settings: AdmissionSettings, health: Health) -> None:
    bus = await Bus.connect(settings.nats, name="phalanx-admission")
    engine = make_engine(settings.postgres)
    api = await make_api_client(settings.kubeconfig)
    try:
        await bus.ensure_streams()
        tls = tls_files(settings)
        loader = ContextLoader(make_sessions(engine), api, scheduler_name=settings.scheduler_name)
        app = build_app(loader, bus.publish_raw_quick, max_request_bytes=settings.max_request_bytes)
        config = uvicorn.Config(
            app,
            host=settings.host,
            port=settings.port,
            ssl_certfile=str(tls.cert),
            ssl_keyfile=str(tls.key),
            log_level="warning",
            access_log=False,
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
        if settings.register_webhooks:
            service = (
                None if settings.webhook_url else (settings.service_name, settings.service_namespace, 443)
            )
            await register(
                api,
                configurations(
                    ca_pem=tls.ca_pem,
                    base_url=settings.webhook_url,
                    service=service,
                    timeout=settings.timeout_seconds,
                ),
            )
        health.set_ready()
        try:
            await serving
        finally:
            server.should_exit = True
    finally:
        await api.close()
        await bus.close()
        await engine.dispose()
