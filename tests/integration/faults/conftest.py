"""Fixtures of the fault tests: an engine on the test's own migrated database, a bus, and a simulator
per module (one node of 8 CPUs, kubelets slow to start pods) with an asyncio client onto it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from kubernetes_asyncio import client
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from services.simulator.nodes import NodeSpec
from services.simulator.testing import RunningSimulator, running_simulator
from shared.bus.nats import Bus
from shared.config import NatsSettings
from shared.kube.client import make_api_client


@pytest.fixture
async def bus(nats_url: str) -> AsyncIterator[Bus]:
    """A bus connected as the controller is (its dead letters are audited as the controller's)."""
    bus = await Bus.connect(NatsSettings(url=nats_url), name="phalanx-controller")
    await bus.ensure_streams()
    yield bus
    await bus.close()


@pytest.fixture(scope="module")
def simulator() -> Iterator[RunningSimulator]:
    with running_simulator(nodes=[NodeSpec("node-0", cpu="8", memory="8Gi")], kubelet_start_delay=30) as sim:
        yield sim


@pytest.fixture
async def api(simulator: RunningSimulator) -> AsyncIterator[client.ApiClient]:
    api = await make_api_client(str(simulator.kubeconfig_path))
    yield api
    await api.close()


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(database_url)
    yield engine
    await engine.dispose()
