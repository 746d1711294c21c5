"""Binding, eviction and the simulated kubelets, through the official client and the control API."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.integration.simulator.conftest import pod_manifest
from tests.simulator_thread import RunningSimulator
from tests.waiting import eventually

pytestmark = pytest.mark.integration


def bind(core: client.CoreV1Api, name: str, node: str, namespace: str = "default") -> None:
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name=name), target=client.V1ObjectReference(kind="Node", name=node)
    )
    # The apiserver answers a binding with a Status, which the generated model cannot read.
    core.create_namespaced_pod_binding(name, namespace, body, _preload_content=False)


def phase_of(core: client.CoreV1Api, name: str, namespace: str = "default") -> str:
    return core.read_namespaced_pod(name, namespace).status.phase


def control(
    simulator: RunningSimulator, path: str, body: dict[str, Any] | None = None, method: str = "POST"
) -> httpx.Response:
    response = httpx.request(method, f"{simulator.url}/simulator/v1/{path}", json=body or {})
    response.raise_for_status()
    return response


def test_binding_runs_the_pod_and_a_second_binding_is_409(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("bound"))
    bind(core, "bound", "node-0")
    pod = core.read_namespaced_pod("bound", "default")
    assert pod.spec.node_name == "node-0"
    assert any(c.type == "PodScheduled" and c.status == "True" for c in pod.status.conditions)
    with pytest.raises(ApiException) as raised:
        bind(core, "bound", "node-1")
    assert raised.value.status == 409
    assert json.loads(raised.value.body)["message"] == (
        'Operation cannot be fulfilled on pods/binding "bound": '
        'pod bound is already assigned to node "node-0"'
    )
    assert eventually(lambda: phase_of(core, "bound") == "Running")
    running = core.read_namespaced_pod("bound", "default")
    assert running.status.pod_ip
    assert running.status.start_time
    assert running.status.container_statuses[0].ready is True


def test_annotations_make_a_pod_fail_with_its_exit_code(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod(
        "default",
        pod_manifest("short", **{"simulator.phalanx/run-seconds": "0.1", "simulator.phalanx/exit-code": "3"}),
    )
    bind(core, "short", "node-1")
    assert eventually(lambda: phase_of(core, "short") == "Failed")
    terminated = core.read_namespaced_pod("short", "default").status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (3, "Error")


def test_annotating_a_running_pod_through_the_api_ends_it(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("ender"))
    bind(core, "ender", "node-1")
    assert eventually(lambda: phase_of(core, "ender") == "Running")
    core.patch_namespaced_pod(
        "ender",
        "default",
        {
            "metadata": {
                "annotations": {"simulator.phalanx/run-seconds": "0", "simulator.phalanx/exit-code": "0"}
            }
        },
    )
    assert eventually(lambda: phase_of(core, "ender") == "Succeeded")


def test_a_pod_that_does_not_fit_its_node_is_refused(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "full"}})
    core.create_namespaced_pod("full", pod_manifest("too-big", cpu="5"))
    bind(core, "too-big", "node-0", "full")
    refused = eventually(lambda: core.read_namespaced_pod("too-big", "full").status.reason)
    assert refused == "OutOfcpu"
    pod = core.read_namespaced_pod("too-big", "full")
    assert pod.status.phase == "Failed"
    assert pod.status.message.startswith("Pod was rejected: Node didn't have enough resource: cpu")


def test_eviction_deletes_the_pod(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("evictee"))
    core.create_namespaced_pod_eviction(
        "evictee",
        "default",
        client.V1Eviction(metadata=client.V1ObjectMeta(name="evictee", namespace="default")),
    )
    with pytest.raises(ApiException) as raised:
        core.read_namespaced_pod("evictee", "default")
    assert raised.value.status == 404


def test_default_scheduler_pods_run_without_a_scheduler(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("plain", cpu="100m", scheduler="default-scheduler"))
    assert eventually(lambda: phase_of(core, "plain") == "Running")


@pytest.mark.parametrize(
    ("action", "body", "phase", "exit_code"),
    [
        ("succeed", None, "Succeeded", 0),
        ("fail", {"exitCode": 4}, "Failed", 4),
    ],
    ids=["succeed", "fail"],
)
def test_control_api_ends_pods(
    simulator: RunningSimulator,
    core: client.CoreV1Api,
    action: str,
    body: dict[str, Any] | None,
    phase: str,
    exit_code: int,
) -> None:
    name = f"ctl-{action}"
    core.create_namespaced_pod("default", pod_manifest(name, cpu="100m"))
    bind(core, name, "node-1")
    control(simulator, f"namespaces/default/pods/{name}/{action}", body)
    pod = core.read_namespaced_pod(name, "default")
    assert pod.status.phase == phase
    assert pod.status.container_statuses[0].state.terminated.exit_code == exit_code


def test_control_api_evicts(simulator: RunningSimulator, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("ctl-evict", cpu="100m"))
    control(simulator, "namespaces/default/pods/ctl-evict/evict")
    with pytest.raises(ApiException):
        core.read_namespaced_pod("ctl-evict", "default")


def test_control_api_manages_nodes(simulator: RunningSimulator, core: client.CoreV1Api) -> None:
    control(
        simulator, "nodes", {"name": "extra", "cpu": "2", "memory": "4Gi", "gpu": 1, "labels": {"zone": "b"}}
    )
    node = core.read_node("extra")
    assert node.status.allocatable["nvidia.com/gpu"] == "1"
    assert node.metadata.labels["zone"] == "b"
    control(simulator, "nodes/extra/cordon")
    node = core.read_node("extra")
    assert node.spec.unschedulable is True
    control(simulator, "nodes/extra/uncordon")
    assert not core.read_node("extra").spec.unschedulable
    control(simulator, "nodes/extra/taint", {"key": "k", "value": "v", "effect": "NoSchedule"})
    assert [(t.key, t.effect) for t in core.read_node("extra").spec.taints] == [("k", "NoSchedule")]
    control(simulator, "nodes/extra/untaint", {"key": "k"})
    assert not core.read_node("extra").spec.taints
    control(simulator, "nodes/extra/notready")
    ready = [c for c in core.read_node("extra").status.conditions if c.type == "Ready"]
    assert ready[0].status == "False"
    control(simulator, "nodes/extra/ready")
    core.create_namespaced_pod("default", pod_manifest("on-extra", cpu="100m"))
    bind(core, "on-extra", "extra")
    control(simulator, "nodes/extra", method="DELETE")
    with pytest.raises(ApiException):
        core.read_node("extra")
    with pytest.raises(ApiException):
        core.read_namespaced_pod("on-extra", "default")


def test_nodes_through_the_kubernetes_api(core: client.CoreV1Api) -> None:
    core.create_node(
        {
            "metadata": {"name": "api-node"},
            "status": {"capacity": {"cpu": "2", "memory": "2Gi", "pods": "10"}},
        }
    )
    node = eventually(lambda: core.read_node("api-node").status.conditions)
    assert any(c.type == "Ready" and c.status == "True" for c in node)
    core.patch_node("api-node", {"spec": {"unschedulable": True}})
    taints = core.read_node("api-node").spec.taints
    assert [t.key for t in taints] == ["node.kubernetes.io/unschedulable"]
    core.delete_node("api-node")
