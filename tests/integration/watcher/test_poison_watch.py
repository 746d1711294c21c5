"""The watcher against the simulator and real NATS: a 1.4 MiB Pod flows (trimmed) and the pod
behind it too; a watch that keeps breaking makes the watcher report not ready, saying which kind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import orjson
import pytest
from kubernetes_asyncio.client import ApiClient

from services.simulator.kubelets.nodes import NodeSpec
from services.watcher.app import BROKEN_AFTER, _report_readiness
from services.watcher.watched_kinds import WatchedKind
from services.watcher.watching import KindWatcher
from shared.bus.nats import NatsBus
from shared.config import NatsSettings
from shared.kube.client import make_api_client, request
from shared.runtime import Health
from tests.simulator_thread import RunningSimulator, running_simulator
from tests.waiting import until

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def simulator() -> Iterator[RunningSimulator]:
    with running_simulator(nodes=[NodeSpec("node-0", cpu="4", memory="8Gi")]) as sim:
        yield sim


@pytest.fixture
async def bus(nats_url: str) -> AsyncIterator[NatsBus]:
    connected = await NatsBus.connect(NatsSettings(url=nats_url), name="watcher-test")
    try:
        await connected.ensure_streams()
        yield connected
    finally:
        await connected.close()


async def pod_watcher(simulator: RunningSimulator, bus: NatsBus, path: str) -> tuple[ApiClient, KindWatcher]:
    api = await make_api_client(str(simulator.kubeconfig_path))
    return api, KindWatcher(api, bus, WatchedKind("Pod", path), scheduler_names=["volcano"], watch_timeout=30)


def pod(name: str, env_bytes: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": "volcano",
            "containers": [
                {"name": "m", "image": "busybox", "env": [{"name": "BLOB", "value": "x" * env_bytes}]}
            ],
        },
    }


async def test_a_pod_up_to_the_size_limit_flows_and_so_does_the_next(
    simulator: RunningSimulator, bus: NatsBus
) -> None:
    api, watcher = await pod_watcher(simulator, bus, "/api/v1/pods")
    running = asyncio.create_task(watcher.run())
    seen: dict[str, dict[str, Any]] = {}
    subscription = await bus.nc.subscribe("cluster.pod.>", cb=None)
    try:
        await asyncio.wait_for(watcher.synced.wait(), 10)
        await request(api, "POST", "/api/v1/namespaces/default/pods", body=pod("big", 1_400_000))
        await request(api, "POST", "/api/v1/namespaces/default/pods", body=pod("small", 10))
        async with asyncio.timeout(20):
            while not {"big", "small"} <= set(seen):
                message = await subscription.next_msg(timeout=20)
                data = orjson.loads(message.data)["data"]
                if "name" in data:  # not the relist's resync marker
                    seen[data["name"]] = data
    finally:
        running.cancel()
        await subscription.unsubscribe()
        await api.close()
    big = seen["big"]
    assert big["complete"] is True
    assert "env" not in big["object"]["spec"]["containers"][0]
    assert "spec.containers[*].env" in big["trimmed"]
    assert watcher.failures == 0


async def test_a_watch_that_keeps_breaking_makes_the_watcher_not_ready(
    simulator: RunningSimulator, bus: NatsBus
) -> None:
    api, broken = await pod_watcher(simulator, bus, "/api/v1/nothing-here")
    health = Health()
    health.set_ready("listed every kind")
    reporting = _report_readiness(lambda: [broken], health)
    tasks = [asyncio.create_task(broken.run()), asyncio.create_task(reporting)]
    try:
        await until(  # each relist waits a second after failing
            lambda: not health.ready, "the watcher not ready", within=BROKEN_AFTER * 2 + 10, every=0.2
        )
    finally:
        for task in tasks:
            task.cancel()
        await api.close()
    assert "Pod watch failed" in health.detail
    assert "in a row" in health.detail
