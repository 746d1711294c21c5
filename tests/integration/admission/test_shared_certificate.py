"""Admission replicas share one CA and serving certificate through a Secret of the (simulated) API
server: replicas starting at once create it once and all serve the same certificate, a replica
that starts later adopts it, and a renewal made by one is served by all, its CA published first.
Real API server writes over HTTP (create and replace at a resourceVersion, 409 on a lost race)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography import x509
from kubernetes_asyncio import client

from services.admission.cert_secret import material_of
from services.admission.certs import Policy
from services.admission.secret_store import SecretStore
from services.admission.tls import TlsKeeper
from shared.kube.client import make_api_client, request
from tests.simulator_thread import running_simulator
from tests.waiting import until

pytestmark = pytest.mark.integration

HOSTS = ["127.0.0.1", "phalanx-admission.kube-system.svc"]
NAMESPACE, NAME = "kube-system", "phalanx-admission-tls"


@pytest.fixture
async def api() -> AsyncIterator[client.ApiClient]:
    """A client of a simulated API server of this test's own."""
    with running_simulator() as simulator:
        kube = await make_api_client(str(simulator.kubeconfig_path))
        try:
            yield kube
        finally:
            await kube.close()


class Replica:
    """One admission replica's TLS keeper and the bundles it published."""

    def __init__(self, api: client.ApiClient, directory: Path, policy: Policy, secret: str) -> None:
        self.keeper = TlsKeeper(directory, HOSTS, policy, shared=SecretStore(api, NAMESPACE, secret))
        self.published: list[bytes] = []

    async def publish(self, bundle: bytes) -> None:
        self.published.append(bundle)

    async def sync(self) -> None:
        await self.keeper.sync_shared(self.publish)

    @property
    def serial(self) -> int:
        cert = self.keeper.serving.cert
        assert cert is not None
        return cert.serial_number


async def stored_serial(api: client.ApiClient, secret: str) -> int:
    found = await request(api, "GET", f"/api/v1/namespaces/{NAMESPACE}/secrets/{secret}")
    material = material_of(found["data"])
    assert material.cert is not None
    return material.cert.serial_number


async def test_replicas_starting_at_once_create_one_secret_and_serve_one_certificate(
    api: client.ApiClient, tmp_path: Path
) -> None:
    policy = Policy(timedelta(days=90), timedelta(days=365), timedelta(days=30))
    replicas = [Replica(api, tmp_path / f"r{index}", policy, NAME) for index in range(3)]
    await asyncio.gather(*(replica.sync() for replica in replicas))
    shared = await stored_serial(api, NAME)
    assert {replica.serial for replica in replicas} == {shared}
    bundles = {bundle for replica in replicas for bundle in replica.published}
    assert len(bundles) == 1, "every replica published the same CA bundle"

    # A replica started later (a scale-up, a restart) adopts it rather than making its own.
    late = Replica(api, tmp_path / "late", policy, NAME)
    await late.sync()
    assert late.serial == shared
    bundle = bundles.pop()
    assert late.published == [bundle]

    # A replica restarted in place finds the Secret's material already in its folder, and serves it.
    restarted = Replica(api, tmp_path / "r0", policy, NAME)
    await restarted.sync()
    assert await handshake_serial(restarted.keeper, bundle) == shared


async def handshake_serial(keeper: TlsKeeper, bundle: bytes) -> int:
    """The serial of the certificate a TLS client verifying against `bundle` is served."""
    server = await asyncio.start_server(lambda _r, w: w.close(), "127.0.0.1", 0, ssl=keeper.context)
    port = server.sockets[0].getsockname()[1]
    try:
        client_context = ssl.create_default_context(cadata=bundle.decode())
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_context)
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        writer.close()
    finally:
        server.close()
    return x509.load_der_x509_certificate(der).serial_number


async def test_a_renewal_by_one_replica_is_served_by_all(api: client.ApiClient, tmp_path: Path) -> None:
    # Certificates of 4 s renewed 2 s before they end: a renewal falls due within seconds.
    policy = Policy(timedelta(seconds=4), timedelta(days=1), timedelta(seconds=2))
    secret = "phalanx-admission-tls-renewing"
    replicas = [Replica(api, tmp_path / f"r{index}", policy, secret) for index in range(2)]
    await asyncio.gather(*(replica.sync() for replica in replicas))
    first = await stored_serial(api, secret)

    async def renewed() -> bool:
        await asyncio.gather(*(replica.sync() for replica in replicas))
        return await stored_serial(api, secret) != first

    await until(renewed, "the shared certificate is renewed", within=30, every=0.5)
    second = await stored_serial(api, secret)
    await asyncio.gather(*(replica.sync() for replica in replicas))
    assert {replica.serial for replica in replicas} == {await stored_serial(api, secret)}
    assert second != first
    # The CA did not change, so nothing new had to be trusted: one bundle, published at start.
    assert all(len(set(replica.published)) == 1 for replica in replicas)
