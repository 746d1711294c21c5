"""Fixtures of the fault tests: an engine on the test's own migrated database and a simulator per
module (one node of 8 CPUs, kubelets slow to start pods); the bus and the client onto the simulator,
`api`, come from tests/integration/conftest.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from services.simulator.kubelets.nodes import NodeSpec
from tests.simulator_thread import RunningSimulator, running_simulator


@pytest.fixture(scope="module")
def simulator() -> Iterator[RunningSimulator]:
    with running_simulator(nodes=[NodeSpec("node-0", cpu="8", memory="8Gi")], kubelet_start_delay=30) as sim:
        yield sim


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(database_url)
    yield engine
    await engine.dispose()
