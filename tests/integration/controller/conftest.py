"""Fixtures of the controller's integration tests that carry decisions out: the test's own
migrated database with a leading scheduler's lease row, a simulator of two nodes (kubelets slow
to start pods, so a bound pod stays bound and not Running), with the shared
`api` and `bus` of tests/integration/conftest.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from kubernetes_asyncio import client
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from services.controller.cache import Cache
from services.controller.dispatch import Dispatcher
from services.controller.gangs import GangKeeper
from services.controller.jobs import JobDriver
from services.controller.kube_writes import KubeWrites
from services.controller.queue_keeper import QueueKeeper
from services.simulator.kubelets.nodes import NodeSpec
from shared.clock import SystemClock
from shared.messages.envelope import new_event
from shared.storage.engine import make_sessions
from tests.integration.decision_fixtures import lead
from tests.simulator_thread import RunningSimulator, running_simulator

# `api` (a client onto this package's simulator) and `bus` come from tests/integration/conftest.py.

LEADING_EPOCH = 5


@pytest.fixture(scope="module")
def simulator() -> Iterator[RunningSimulator]:
    nodes = [NodeSpec(f"node-{i}", cpu="8", memory="8Gi") for i in range(2)]
    with running_simulator(nodes=nodes, kubelet_start_delay=30) as sim:
        yield sim


@pytest.fixture
async def leading(database_url: str) -> AsyncIterator[AsyncEngine]:
    """An engine on a database where scheduler epoch LEADING_EPOCH holds the lease."""
    engine = create_async_engine(database_url)
    await lead(engine, LEADING_EPOCH)
    yield engine
    await engine.dispose()


def controller(
    engine: AsyncEngine,
    api: client.ApiClient,
    *,
    acts_for_group: Callable[[dict[str, Any]], bool] | None = None,
) -> Dispatcher:
    """The controller's reacting half as app.py's `build` composes it, without the streams;
    `acts_for_group` as a sharded replica's leases answer it."""
    cache = Cache()
    sessions = make_sessions(engine)
    kube = KubeWrites(api, lambda written: dispatcher.written(written))
    jobs = JobDriver(cache, kube, sessions, clock=SystemClock(), on_committed=lambda: None)
    gangs = GangKeeper(
        cache,
        kube,
        sessions,
        scheduler_names=["volcano"],
        on_committed=lambda: None,
        acts_for_group=acts_for_group,
    )
    queues = QueueKeeper(cache, kube, sessions, job_command=jobs.command_issued)
    dispatcher = Dispatcher(cache, jobs=jobs, gangs=gangs, queues=queues)
    return dispatcher


def decision(kind: Any, podgroup: dict[str, Any], **fields: Any) -> Any:
    """A decision of the leading scheduler about `podgroup`, as it comes off `decisions.*`."""
    meta = podgroup["metadata"]
    data = kind(
        epoch=LEADING_EPOCH,
        cycle=1,
        gang_uid=meta["uid"],
        namespace=meta["namespace"],
        podgroup=meta["name"],
        **fields,
    )
    return new_event(data, source="test")
