"""A simulator per test module, started in-process, and official-client handles onto it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from services.simulator.nodes import NodeSpec
from services.simulator.testing import RunningSimulator, running_simulator

NODES = [NodeSpec("node-0", cpu="4", memory="8Gi"), NodeSpec("node-1", cpu="4", memory="8Gi")]


@pytest.fixture(scope="module")
def simulator() -> Iterator[RunningSimulator]:
    with running_simulator(nodes=NODES, kubelet_start_delay=0.02, bookmark_interval=0.2) as sim:
        yield sim


@pytest.fixture(scope="module")
def api_client(simulator: RunningSimulator) -> Iterator[client.ApiClient]:
    api = client.ApiClient(simulator.client_configuration())
    yield api
    api.close()


@pytest.fixture(scope="module")
def core(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture(scope="module")
def custom(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


def pod_manifest(name: str, cpu: str = "1", scheduler: str = "volcano", **annotations: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations, "labels": {"app": name}},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
            ],
        },
    }
