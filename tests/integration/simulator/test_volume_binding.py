"""The simulator's PersistentVolume controller, driven over HTTP with the official client: claims
bind to pre-created volumes as Kubernetes binds them (Immediate at once, WaitForFirstConsumer once
a pod that mounts the claim is on a node the volume's nodeAffinity admits)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from services.simulator.kubelets.nodes import NodeSpec
from tests.integration.simulator.conftest import eventually, pod_manifest
from tests.simulator_thread import RunningSimulator, running_simulator

pytestmark = pytest.mark.integration

ZONES = [
    NodeSpec("node-a", cpu="4", memory="8Gi", labels={"disk": "a"}),
    NodeSpec("node-b", cpu="4", memory="8Gi", labels={"disk": "b"}),
]


@pytest.fixture(scope="module")
def simulator() -> Iterator[RunningSimulator]:
    with running_simulator(nodes=ZONES, kubelet_start_delay=0.02, bookmark_interval=0.2) as sim:
        yield sim


def _class(name: str, mode: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": mode,
    }


def _volume(name: str, class_name: str, size: str, node_label: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": class_name,
        "local": {"path": "/mnt/disk"},
    }
    if node_label is not None:
        term = {"matchExpressions": [{"key": "disk", "operator": "In", "values": [node_label]}]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def _claim(name: str, class_name: str, size: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": class_name,
            "resources": {"requests": {"storage": size}},
        },
    }


def _phase(core: client.CoreV1Api, claim: str) -> str | None:
    return core.read_namespaced_persistent_volume_claim(claim, "default").status.phase


def test_an_immediate_claim_binds_to_the_smallest_volume_that_fits(
    api_client: client.ApiClient, core: client.CoreV1Api
) -> None:
    client.StorageV1Api(api_client).create_storage_class(_class("fast", "Immediate"))
    core.create_persistent_volume(_volume("fast-big", "fast", "10Gi"))
    core.create_persistent_volume(_volume("fast-small", "fast", "2Gi"))
    core.create_persistent_volume(_volume("fast-tiny", "fast", "500Mi"))
    core.create_namespaced_persistent_volume_claim("default", _claim("data", "fast", "1Gi"))
    assert eventually(lambda: _phase(core, "data") == "Bound")
    claim = core.read_namespaced_persistent_volume_claim("data", "default")
    assert claim.spec.volume_name == "fast-small"
    assert claim.status.capacity == {"storage": "2Gi"}
    volume = core.read_persistent_volume("fast-small")
    assert volume.status.phase == "Bound"
    assert (volume.spec.claim_ref.name, volume.spec.claim_ref.uid) == ("data", claim.metadata.uid)
    assert core.read_persistent_volume("fast-big").status.phase == "Available"


def test_a_claim_nothing_matches_stays_pending(api_client: client.ApiClient, core: client.CoreV1Api) -> None:
    client.StorageV1Api(api_client).create_storage_class(_class("slow", "Immediate"))
    core.create_persistent_volume(_volume("slow-one", "slow", "1Gi"))
    core.create_namespaced_persistent_volume_claim("default", _claim("huge", "slow", "100Gi"))
    # A claim that fits, made after the one that does not: once the binder has bound it, it has
    # also looked at the larger claim, and left it waiting rather than bind it short.
    core.create_namespaced_persistent_volume_claim("default", _claim("small", "slow", "1Gi"))
    assert eventually(lambda: _phase(core, "small") == "Bound")
    assert _phase(core, "huge") == "Pending"
    assert core.read_persistent_volume("slow-one").spec.claim_ref.name == "small"


def test_a_wait_for_first_consumer_claim_binds_on_its_pods_node(
    api_client: client.ApiClient, core: client.CoreV1Api
) -> None:
    client.StorageV1Api(api_client).create_storage_class(_class("local", "WaitForFirstConsumer"))
    core.create_persistent_volume(_volume("local-a", "local", "5Gi", node_label="a"))
    core.create_persistent_volume(_volume("local-b", "local", "5Gi", node_label="b"))
    core.create_namespaced_persistent_volume_claim("default", _claim("scratch", "local", "1Gi"))
    pod = pod_manifest("consumer")
    pod["spec"]["volumes"] = [{"name": "scratch", "persistentVolumeClaim": {"claimName": "scratch"}}]
    core.create_namespaced_pod("default", pod)
    assert eventually(lambda: core.read_persistent_volume("local-a").status.phase == "Available")
    assert _phase(core, "scratch") == "Pending"  # no consumer on a node yet
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "consumer"},
        "target": {"name": "node-b"},
    }
    core.create_namespaced_binding("default", binding, _preload_content=False)
    assert eventually(lambda: _phase(core, "scratch") == "Bound")
    claim = core.read_namespaced_persistent_volume_claim("scratch", "default")
    assert claim.spec.volume_name == "local-b"
    assert claim.metadata.annotations["volume.kubernetes.io/selected-node"] == "node-b"
    assert core.read_persistent_volume("local-a").status.phase == "Available"
