"""A simulator per test module, started in-process, and official-client handles onto it."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from services.simulator.kubelets.nodes import NodeSpec
from tests.simulator_thread import RunningSimulator, running_simulator
from tests.waiting import eventually

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


# -- cluster-agnostic contract tests (test_contract_deletion.py, test_contract_eviction.py, ...) --
#
# They use only the Kubernetes API, so they run unchanged against a real cluster:
#   PHALANX_CONTRACT_CLUSTER=1 KUBECONFIG=~/.kube/config scripts/contract-on-cluster.sh
# Each test works in a namespace of its own, deleted afterwards. Opting in takes the variable as
# well as KUBECONFIG, so a developer's everyday KUBECONFIG is never written to by accident.
REAL_CLUSTER = os.environ.get("PHALANX_CONTRACT_CLUSTER") == "1"
# On a real cluster the container ignores SIGTERM, so it is killed when its grace period ends;
# the annotation tells the simulated kubelet the same (it is inert on a real cluster).
STUBBORN = {"simulator.phalanx/stop-seconds": "3600"}
_namespaces = itertools.count()


@pytest.fixture(scope="module")
def cluster_api() -> Iterator[client.ApiClient]:
    """An API client onto a real cluster (opted in, above) or onto a simulator of this module."""
    if REAL_CLUSTER:
        api = config.new_client_from_config(config_file=os.environ.get("KUBECONFIG"))
        yield api
        api.close()
        return
    with running_simulator(nodes=NODES, kubelet_start_delay=0.02, bookmark_interval=0.2) as sim:
        api = client.ApiClient(sim.client_configuration())
        yield api
        api.close()


@pytest.fixture
def cluster_core(cluster_api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(cluster_api)


@pytest.fixture
def cluster_policy(cluster_api: client.ApiClient) -> client.PolicyV1Api:
    return client.PolicyV1Api(cluster_api)


@pytest.fixture
def namespace(cluster_api: client.ApiClient) -> Iterator[str]:
    core = client.CoreV1Api(cluster_api)
    name = f"contract-{os.getpid()}-{next(_namespaces)}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    core.delete_namespace(name)


def running_pod(
    name: str,
    *,
    grace: int = 3,
    labels: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A pod the default scheduler places and whose container ignores SIGTERM, so its
    termination lasts its whole grace period."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": labels or {"app": name},
            "annotations": {**STUBBORN, **(annotations or {})},
            **({"ownerReferences": owners} if owners else {}),
        },
        "spec": {
            "terminationGracePeriodSeconds": grace,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:1.36",
                    "command": ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"],
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ],
        },
    }


def wait_ready(core: client.CoreV1Api, namespace: str, name: str, within: float = 120.0) -> None:
    def ready() -> bool:
        pod = core.read_namespaced_pod(name, namespace)
        return pod.status.phase == "Running" and any(
            c.type == "Ready" and c.status == "True" for c in pod.status.conditions or []
        )

    eventually(ready, f"pod {namespace}/{name} Ready", within=within)


def gone(read: Callable[[], Any]) -> bool:
    try:
        read()
    except ApiException as error:
        if error.status == 404:
            return True
        raise
    return False
