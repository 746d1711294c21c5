"""DeviceClasses, ResourceClaims and ResourceSlices from the manifests the watcher publishes to what
the device allocator reads: `projection.project` keeps them in `device_objects` rows, and
`build_snapshot` resolves each pod's claims against them every cycle, counts its devices as queue
resources and each node's devices as allocatable (#26 item 4)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from services.scheduler import device_rows
from services.scheduler.core.devices import CLASS_RESOURCE_PREFIX
from services.scheduler.device_rows import pod_claims, with_dra_quota
from services.scheduler.snapshot_reader import ShellMemory, build_snapshot
from tests.unit.scheduler.builders import NOW
from tests.unit.scheduler.test_pod_fields import pod, row

pytestmark = pytest.mark.unit

DRIVER = "gpu.example.com"
GPUS = CLASS_RESOURCE_PREFIX + "gpus"


def _device_class(name: str, expression: str, resource: str = "") -> Any:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": expression}}]}
    if resource:
        spec["extendedResourceName"] = resource
    return row("DeviceClass", {"metadata": {"name": name, "uid": f"uid-{name}"}, "spec": spec})


def _slice(node: str, *models: str) -> Any:
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {"model": {"string": m}},
            "capacity": {"memory": {"value": "80Gi"}},
        }
        for i, m in enumerate(models)
    ]
    spec = {"driver": DRIVER, "nodeName": node, "pool": {"name": node}, "devices": devices}
    return row("ResourceSlice", {"metadata": {"name": f"{node}-slice", "uid": f"uid-{node}"}, "spec": spec})


def _claim(name: str, count: int = 1, model: str = "", allocated_on: str = "") -> Any:
    exactly: dict[str, Any] = {"deviceClassName": "gpus", "count": count}
    if model:
        exactly["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}]
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }
    if allocated_on:
        result = {"request": "gpu", "driver": DRIVER, "pool": allocated_on, "device": "gpu-0"}
        body["status"] = {"allocation": {"devices": {"results": [result]}}}
    return row("ResourceClaim", body)


def _node(name: str) -> Any:
    return SimpleNamespace(
        name=name,
        allocatable={"cpu": 8000},
        labels={},
        taints=None,
        unschedulable=False,
        ready=True,
        resource_version=1,
    )


def _snapshot(claim_ref: dict[str, Any], devices: list[Any], **pod_fields: Any) -> Any:
    asking = pod("p", resourceClaims=[{"name": "gpu", **claim_ref}], **pod_fields)
    group = row("PodGroup", {"metadata": {"name": "pg", "namespace": "default", "uid": "pg"}, "spec": {}})
    return build_snapshot(
        now=NOW,
        queues=[],
        nodes=[_node("n-a"), _node("n-b")],
        priority_classes=[],
        groups=[group],
        pods=[row("Pod", asking)],
        decisions=[],
        memory=ShellMemory(),
        devices=devices,
    )


CLUSTER = [
    _device_class("gpus", f'device.driver == "{DRIVER}"'),
    _slice("n-a", "a100", "a100"),
    _slice("n-b", "h100"),
]


def test_a_pending_pods_claim_resolves_to_the_devices_its_selectors_admit() -> None:
    snapshot = _snapshot({"resourceClaimName": "c"}, [*CLUSTER, _claim("c", model="h100")])
    (task,) = snapshot.gangs[0].tasks
    (need,) = task.device_claims
    (request,) = need.requests
    assert request.candidates == {"n-b": ((DRIVER, "n-b", "gpu-0"),)}
    assert task.request[GPUS] == 1000  # one device of class gpus, counted for its queue
    nodes = {n.name: n.allocatable.get(GPUS, 0) for n in snapshot.nodes}
    assert nodes == {"n-a": 2000, "n-b": 1000}


def test_a_claim_still_to_be_generated_waits_and_a_missing_one_is_named() -> None:
    snapshot = _snapshot({"resourceClaimTemplateName": "t"}, CLUSTER)
    (need,) = snapshot.gangs[0].tasks[0].device_claims
    assert need.waiting
    snapshot = _snapshot({"resourceClaimName": "ghost"}, CLUSTER)
    (need,) = snapshot.gangs[0].tasks[0].device_claims
    assert need.problem == 'resourceclaim "default/ghost" not found'


def test_a_missing_class_or_a_broken_selector_is_the_claims_problem() -> None:
    snapshot = _snapshot({"resourceClaimName": "c"}, [_slice("n-a", "a100"), _claim("c")])
    (need,) = snapshot.gangs[0].tasks[0].device_claims
    assert 'device class "gpus" does not exist' in need.problem
    broken = [_device_class("gpus", "device.driver =="), _slice("n-a", "a100"), _claim("c")]
    (need,) = _snapshot({"resourceClaimName": "c"}, broken).gangs[0].tasks[0].device_claims
    assert "does not compile" in need.problem


def test_allocated_claims_take_their_devices_and_tie_the_pod_to_the_node() -> None:
    snapshot = _snapshot({"resourceClaimName": "c"}, [*CLUSTER, _claim("c", allocated_on="n-a")])
    assert snapshot.devices_taken == frozenset({(DRIVER, "n-a", "gpu-0")})
    (need,) = snapshot.gangs[0].tasks[0].device_claims
    assert need.allocated_node == "n-a"


def test_a_class_with_an_extended_resource_name_counts_as_that_name() -> None:
    named = [_device_class("gpus", f'device.driver == "{DRIVER}"', "nvidia.com/gpu"), *CLUSTER[1:]]
    snapshot = _snapshot({"resourceClaimName": "c"}, [*named, _claim("c", count=2)])
    assert snapshot.gangs[0].tasks[0].request["nvidia.com/gpu"] == 2000


def test_pod_claims_read_named_claims_and_generated_ones_from_the_status() -> None:
    spec = {
        "resourceClaims": [
            {"name": "a", "resourceClaimName": "shared"},
            {"name": "b", "resourceClaimTemplateName": "t"},
        ]
    }
    assert pod_claims({"spec": spec}) == [["a", "shared"], ["b", None]]
    status = {"resourceClaimStatuses": [{"name": "b", "resourceClaimName": "p-b-x1y2z"}]}
    assert pod_claims({"spec": spec, "status": status}) == [["a", "shared"], ["b", "p-b-x1y2z"]]


def test_a_queues_dra_section_counts_devices_of_a_class() -> None:
    spec = {"dra": {"capability": {"gpus": {"count": 4}}, "deserved": {"gpus": {"count": 2}}}}
    assert with_dra_quota({"cpu": 1000}, spec, "capability") == {"cpu": 1000, GPUS: 4000}
    assert with_dra_quota(None, spec, "deserved") == {GPUS: 2000}
    assert with_dra_quota(None, spec, "guarantee") is None


def test_a_claim_of_a_shape_the_api_server_would_refuse_is_never_allocated_and_says_why() -> None:
    odd = row(
        "ResourceClaim",
        {
            "metadata": {"name": "odd", "namespace": "default", "uid": "uid-odd"},
            "spec": {"devices": {"requests": ["not-a-request"]}},
        },
    )
    (need,) = _snapshot({"resourceClaimName": "odd"}, [*CLUSTER, odd]).gangs[0].tasks[0].device_claims
    assert need.problem.startswith('resourceclaim "default/odd" cannot be read')


def test_selectors_run_once_per_slice_version_across_views(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = device_rows.matching_devices

    def counted(devices: Any, expressions: Any) -> Any:
        calls.append(1)
        return real(devices, expressions)

    monkeypatch.setattr(device_rows, "matching_devices", counted)
    shared: dict[Any, Any] = {}
    expressions = [f'device.driver == "{DRIVER}"']
    first = device_rows.device_view([*CLUSTER, _claim("c")], shared).candidates(expressions)
    assert len(calls) == 2  # one per slice
    # A claim's allocation changes the view, not the slices: nothing is evaluated again.
    second = device_rows.device_view([*CLUSTER, _claim("c", allocated_on="n-a")], shared)
    assert second.candidates(expressions) == first
    assert len(calls) == 2
