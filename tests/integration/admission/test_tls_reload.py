"""The webhook's real HTTPS server (uvicorn with the `TlsKeeper`'s context) and a real TLS client:
supplied certificate files replaced on disk are served by new handshakes without a restart, a
mismatched pair is not, and a changed CA file is published."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import uvicorn
from cryptography import x509
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from services.admission.certs import Material, Policy, renew
from services.admission.tls import Supplied, TlsKeeper
from shared.infra import local
from tests.waiting import until

pytestmark = pytest.mark.integration

HOSTS = ["127.0.0.1"]
POLICY = Policy(timedelta(days=30), timedelta(days=90), timedelta(days=10))


def material(now: datetime) -> Material:
    return renew(Material(), HOSTS, POLICY, now)


def supply(files: Supplied, made: Material, *, key_from: Material | None = None) -> None:
    files.cert.write_bytes(made.cert_pem)
    files.key.write_bytes((key_from or made).key_pem)
    files.ca.write_bytes(made.bundle_pem)


async def served(port: int, ca_pem: bytes) -> x509.Certificate:
    """The certificate a new handshake gets, verified against `ca_pem`; and a request succeeds."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    async with httpx.AsyncClient(verify=context) as client:
        assert (await client.get(f"https://127.0.0.1:{port}/")).text == "ok"
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="127.0.0.1")
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    return x509.load_der_x509_certificate(der)


def _started(server: uvicorn.Server, serving: asyncio.Task[None]) -> Callable[[], Awaitable[bool]]:
    async def started() -> bool:
        if serving.done():
            await serving  # it failed to start: raise why
        return bool(server.started)

    return started


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[int, Supplied, list[bytes], Material]]:
    files = Supplied(tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "ca.crt")
    first = material(datetime.now(UTC))
    supply(files, first)
    keeper = TlsKeeper(
        tmp_path / "generated", HOSTS, POLICY, supplied=files, check_every=timedelta(seconds=0.1)
    )
    port = local.free_port()
    app = Starlette(routes=[Route("/", lambda _request: PlainTextResponse("ok"))])
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        ssl_context_factory=lambda _config, _default: keeper.context,
        log_level="warning",
        lifespan="off",
    )
    uvicorn_server = uvicorn.Server(config)
    uvicorn_server.capture_signals = contextlib.nullcontext  # type: ignore[assignment]
    published: list[bytes] = []

    async def publish(bundle: bytes) -> None:
        published.append(bundle)

    serving = asyncio.create_task(uvicorn_server.serve())
    rotating = asyncio.create_task(keeper.run(publish))
    await until(_started(uvicorn_server, serving), "the webhook server serving")
    try:
        yield port, files, published, first
    finally:
        rotating.cancel()
        uvicorn_server.should_exit = True
        await serving


async def eventually_served(port: int, ca_pem: bytes, serial: int) -> x509.Certificate:

    async def new_one() -> x509.Certificate | None:
        with contextlib.suppress(ssl.SSLError, httpx.ConnectError):
            cert = await served(port, ca_pem)
            if cert.serial_number == serial:
                return cert
        return None

    served_cert = await until(new_one, f"the certificate with serial {serial} served")
    assert served_cert is not None
    return served_cert


async def test_replaced_files_are_served_without_a_restart(
    server: tuple[int, Supplied, list[bytes], Material],
) -> None:
    port, files, published, first = server
    assert first.cert is not None
    assert (await served(port, first.bundle_pem)).serial_number == first.cert.serial_number
    second = material(datetime.now(UTC))  # a new CA as well: what cert-manager does on re-issue
    assert second.cert is not None
    supply(files, second)
    await eventually_served(port, second.bundle_pem, second.cert.serial_number)
    assert published == [second.bundle_pem], "the new CA goes into the webhook configurations"


async def test_a_certificate_without_its_key_is_not_served(
    server: tuple[int, Supplied, list[bytes], Material],
) -> None:
    port, files, _, first = server
    assert first.cert is not None
    half = material(datetime.now(UTC))
    assert half.cert is not None
    supply(files, half, key_from=first)  # the certificate is new, the key not yet
    await asyncio.sleep(0.5)
    assert (await served(port, first.bundle_pem)).serial_number == first.cert.serial_number
    files.key.write_bytes(half.key_pem)  # the key catches up
    await eventually_served(port, half.bundle_pem, half.cert.serial_number)


async def test_generated_certificates_rotate_under_a_running_server_and_a_new_ca_is_trusted_first(
    tmp_path: Path,
) -> None:
    # Seconds instead of days: a new CA every 2.5 s (its validity less twice the renew-before),
    # the second one serving from 4.5 s, when the first has less than the renew-before left.
    policy = Policy(timedelta(seconds=3), timedelta(seconds=6.5), timedelta(seconds=2))
    keeper = TlsKeeper(tmp_path, HOSTS, policy)
    attempts: list[bytes] = []
    published: list[bytes] = [keeper.ca_pem]  # what app.py registers at start

    async def publish(bundle: bytes) -> None:
        attempts.append(bundle)
        if len(attempts) == 1:
            raise OSError("the API server is away")  # the keeper must try the same bundle again
        published.append(bundle)

    port = local.free_port()
    app = Starlette(routes=[Route("/", lambda _request: PlainTextResponse("ok"))])
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        ssl_context_factory=lambda _config, _default: keeper.context,
        log_level="warning",
        lifespan="off",
    )
    uvicorn_server = uvicorn.Server(config)
    uvicorn_server.capture_signals = contextlib.nullcontext  # type: ignore[assignment]
    serving = asyncio.create_task(uvicorn_server.serve())
    rotating = asyncio.create_task(keeper.run(publish))
    try:
        await until(_started(uvicorn_server, serving), "the webhook server serving")
        first_ca = x509.load_pem_x509_certificates(published[0])[0]
        issuers, serials = set(), set()
        deadline = asyncio.get_running_loop().time() + 6.5
        while asyncio.get_running_loop().time() < deadline:
            cert = await served(port, published[-1])  # verified with the last published bundle
            issuers.add(cert.issuer.rfc4514_string())
            serials.add(cert.serial_number)
            await asyncio.sleep(0.2)
    finally:
        rotating.cancel()
        uvicorn_server.should_exit = True
        await serving
    assert len(serials) >= 3
    assert first_ca.subject.rfc4514_string() in issuers
    assert len(issuers) >= 2, "a certificate from the second CA was served"
    assert attempts[1] == attempts[0], "the failed bundle was published again, not replaced"
