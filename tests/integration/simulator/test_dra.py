"""The simulator serves resource.k8s.io/v1 (DeviceClass, ResourceClaim, ResourceClaimTemplate,
ResourceSlice) to the official client; its kubelets publish ResourceSlices for their devices, and
its resourceclaim controller makes a pod's claims from templates and lets them go when the pod
ends, as Kubernetes does (#26 item 4)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from services.simulator.kubelets.nodes import NodeSpec
from tests.integration.simulator.conftest import eventually, pod_manifest
from tests.simulator_thread import RunningSimulator, running_simulator

pytestmark = pytest.mark.integration

DRIVER = "gpu.example.com"
GPU_NODES = [
    NodeSpec(
        "gpu-a",
        devices=({"driver": DRIVER, "count": 2, "namePrefix": "gpu", "attributes": {"model": "a100"}},),
    ),
    NodeSpec("plain-b"),
]


@pytest.fixture(scope="module")
def simulator() -> Iterator[RunningSimulator]:
    with running_simulator(nodes=GPU_NODES, kubelet_start_delay=0.02, bookmark_interval=0.2) as sim:
        yield sim


@pytest.fixture(scope="module")
def resource(api_client: client.ApiClient) -> client.ResourceV1Api:
    return client.ResourceV1Api(api_client)


def _template(name: str) -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpus", "count": 1}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def test_kubelets_publish_a_slice_per_driver_with_typed_attributes(resource: client.ResourceV1Api) -> None:
    slices = resource.list_resource_slice().items
    assert [s.metadata.name for s in slices] == [f"gpu-a-{DRIVER}"]
    spec = slices[0].spec
    assert (spec.driver, spec.node_name, spec.pool.name, spec.pool.resource_slice_count) == (
        DRIVER,
        "gpu-a",
        "gpu-a",
        1,
    )
    assert [d.name for d in spec.devices] == ["gpu-0", "gpu-1"]
    assert spec.devices[0].attributes["model"].string == "a100"


def test_device_classes_and_claims_are_served_with_their_fields(resource: client.ResourceV1Api) -> None:
    selector = {"cel": {"expression": f'device.driver == "{DRIVER}"'}}
    resource.create_device_class(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpus"},
            "spec": {"selectors": [selector]},
        }
    )
    assert (
        resource.read_device_class("gpus").spec.selectors[0].cel.expression == selector["cel"]["expression"]
    )
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "shared"},
        "spec": {
            "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpus", "count": 2}}]}
        },
    }
    created = resource.create_namespaced_resource_claim("default", claim)
    assert created.spec.devices.requests[0].exactly.count == 2
    resource.create_namespaced_resource_claim_template("default", _template("one-gpu"))
    assert resource.read_namespaced_resource_claim_template("one-gpu", "default").spec.spec.devices


def test_a_pod_gets_its_claim_from_the_template_and_loses_it_with_the_pod(
    core: client.CoreV1Api, resource: client.ResourceV1Api
) -> None:
    pod = pod_manifest("trainer")
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    core.create_namespaced_pod("default", pod)

    def generated() -> str | None:
        statuses = core.read_namespaced_pod("trainer", "default").status.resource_claim_statuses or []
        return next((s.resource_claim_name for s in statuses if s.name == "gpu"), None)

    assert eventually(lambda: generated() is not None)
    name = generated()
    assert name is not None
    assert name.startswith("trainer-gpu-")
    claim = resource.read_namespaced_resource_claim(name, "default")
    assert claim.metadata.annotations["resource.kubernetes.io/pod-claim-name"] == "gpu"
    assert [(o.kind, o.name, o.controller) for o in claim.metadata.owner_references] == [
        ("Pod", "trainer", True)
    ]
    assert claim.spec.devices.requests[0].exactly.device_class_name == "gpus"
    core.delete_namespaced_pod("trainer", "default", grace_period_seconds=0)

    def gone() -> bool:
        try:
            resource.read_namespaced_resource_claim(name, "default")
        except ApiException as error:
            return error.status == 404
        return False

    assert eventually(gone)


def test_a_claim_is_released_when_the_pod_it_was_reserved_for_ends(
    simulator: RunningSimulator, core: client.CoreV1Api, resource: client.ResourceV1Api
) -> None:
    pod = pod_manifest("user", **{"simulator.phalanx/run-seconds": "0.2"})
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
    created = core.create_namespaced_pod("default", pod)
    allocation = {
        "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "gpu-a", "device": "gpu-0"}]},
    }
    reserved = [{"resource": "pods", "name": "user", "uid": created.metadata.uid}]
    resource.patch_namespaced_resource_claim_status(
        "shared", "default", {"status": {"allocation": allocation, "reservedFor": reserved}}
    )
    core.create_namespaced_binding(
        "default",
        {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "user"}, "target": {"name": "gpu-a"}},
        _preload_content=False,
    )
    assert eventually(lambda: core.read_namespaced_pod("user", "default").status.phase == "Succeeded")
    assert eventually(
        lambda: resource.read_namespaced_resource_claim("shared", "default").status.reserved_for is None
    )
    assert resource.read_namespaced_resource_claim("shared", "default").status.allocation is None
