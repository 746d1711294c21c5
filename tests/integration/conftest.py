"""Fixtures every integration package may use: a bus onto the test's NATS server with every stream
made, a simulator per module (one node; a module or package that needs other nodes or settings
defines its own `simulator`), and `api`, a client onto whichever simulator the module runs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from kubernetes_asyncio import client

from services.simulator.kubelets.nodes import NodeSpec
from shared.bus.nats import NatsBus
from shared.config import NatsSettings
from shared.kube.client import make_api_client
from tests.simulator_thread import RunningSimulator, running_simulator


@pytest.fixture
async def bus(nats_url: str) -> AsyncIterator[NatsBus]:
    """A bus connected as the controller is (its dead letters are audited as the controller's)."""
    bus = await NatsBus.connect(NatsSettings(url=nats_url), name="phalanx-controller")
    await bus.ensure_streams()
    yield bus
    await bus.close()


@pytest.fixture(scope="module")
def simulator() -> Iterator[RunningSimulator]:
    with running_simulator(nodes=[NodeSpec("node-0", cpu="8", memory="8Gi")]) as sim:
        yield sim


@pytest.fixture
async def api(simulator: RunningSimulator) -> AsyncIterator[client.ApiClient]:
    """An asyncio Kubernetes client onto the module's simulator, as the services make theirs."""
    api = await make_api_client(str(simulator.kubeconfig_path))
    yield api
    await api.close()
