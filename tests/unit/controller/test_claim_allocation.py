"""What the controller writes to a pod's ResourceClaim before it binds the pod (#26 item 4): the
allocation as kube-scheduler's PreBind writes it, one result per device and a node selector for
the node, and whether an allocation already there is the same one (a redelivered decision)."""

from __future__ import annotations

import pytest

from services.controller.claims import allocation, same_devices
from shared.messages.decisions import AllocatedDevice

pytestmark = pytest.mark.unit


def _device(name: str, request: str = "gpu") -> AllocatedDevice:
    return AllocatedDevice(claim="c", request=request, driver="gpu.example.com", pool="node-a", device=name)


def test_the_allocation_names_each_device_and_the_node() -> None:
    written = allocation("node-a", [_device("gpu-0"), _device("gpu-1")])
    assert written == {
        "devices": {
            "results": [
                {"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0"},
                {"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-1"},
            ]
        },
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}
            ]
        },
    }


def test_an_allocation_is_the_same_whatever_the_order_of_its_results() -> None:
    ours = allocation("node-a", [_device("gpu-0"), _device("gpu-1")])
    assert same_devices(allocation("node-a", [_device("gpu-1"), _device("gpu-0")]), ours)
    assert not same_devices(allocation("node-a", [_device("gpu-2"), _device("gpu-0")]), ours)
