"""Where the services listen, and what TLS the webhook speaks.

Health and metrics listen on the address their setting names, loopback by default, so that a
service started on a laptop or a shared host is not reachable from the network unless asked; the
admission webhook refuses any TLS older than 1.2.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from datetime import timedelta
from pathlib import Path

import pytest

from services.admission.certs import Policy
from services.admission.settings import AdmissionSettings
from services.admission.tls import TlsKeeper
from services.console.settings import ConsoleSettings
from services.controller.settings import ControllerSettings
from services.scheduler.settings import SchedulerSettings
from services.watcher.settings import WatcherSettings
from shared.runtime import Health, serve_health

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "settings", [WatcherSettings, SchedulerSettings, ControllerSettings, AdmissionSettings, ConsoleSettings]
)
def test_health_listens_on_loopback_unless_configured(
    settings: type[WatcherSettings], monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = str(settings.model_config.get("env_prefix"))
    monkeypatch.delenv(f"{prefix}HEALTH_HOST", raising=False)
    assert settings().health_host == "127.0.0.1"
    monkeypatch.setenv(f"{prefix}HEALTH_HOST", "0.0.0.0")
    assert settings().health_host == "0.0.0.0"


def test_the_webhook_listens_on_loopback_unless_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADMISSION_HOST", raising=False)
    assert AdmissionSettings().host == "127.0.0.1"


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
async def test_the_health_server_binds_the_configured_address(host: str) -> None:
    server = await serve_health(Health(), 0, host)
    try:
        assert {sock.getsockname()[0] for sock in server.sockets} == {host}
    finally:
        server.close()
        await server.wait_closed()


async def _handshake(server_context: ssl.SSLContext, newest: ssl.TLSVersion) -> str:
    """The TLS version a client capped at `newest` agrees with a server using `server_context`."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_context)
    port = server.sockets[0].getsockname()[1]
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.check_hostname, client.verify_mode = False, ssl.CERT_NONE
    client.minimum_version, client.maximum_version = ssl.TLSVersion.TLSv1, newest
    client.set_ciphers("DEFAULT:@SECLEVEL=0")  # let OpenSSL offer the old versions at all
    try:
        with socket.create_connection(("127.0.0.1", port)) as raw:
            raw.setblocking(False)
            loop = asyncio.get_running_loop()
            transport, _ = await loop.create_connection(
                asyncio.Protocol, sock=raw, ssl=client, server_hostname="x"
            )
            version = transport.get_extra_info("ssl_object").version()
            transport.close()
            return str(version)
    finally:
        server.close()


# The client must offer TLS 1.0 and 1.1 to prove the webhook refuses it; Python warns that 1.0 is deprecated.
@pytest.mark.filterwarnings(r"ignore:ssl\.TLSVersion\.TLSv1(_1)? is deprecated:DeprecationWarning")
async def test_the_webhook_refuses_tls_older_than_1_2(tmp_path: Path) -> None:
    day = timedelta(days=1)
    keeper = TlsKeeper(tmp_path, ["localhost"], Policy(day * 30, day * 365, day))
    # Stated, not left to the OpenSSL build's security level (which may or may not refuse 1.1).
    assert keeper.context.minimum_version == ssl.TLSVersion.TLSv1_2
    permissive = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    permissive.minimum_version = ssl.TLSVersion.TLSv1
    permissive.set_ciphers("DEFAULT:@SECLEVEL=0")
    permissive.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    try:
        control = await _handshake(permissive, ssl.TLSVersion.TLSv1_1)
    except (ssl.SSLError, OSError):
        pytest.skip("this OpenSSL cannot speak TLS 1.1 at all, so the refusal cannot be shown")
    assert control == "TLSv1.1"
    with pytest.raises((ssl.SSLError, OSError)):
        await _handshake(keeper.context, ssl.TLSVersion.TLSv1_1)
    assert await _handshake(keeper.context, ssl.TLSVersion.TLSv1_2) == "TLSv1.2"
