"""What a simulated node's DRA drivers publish (#26 item 4): one ResourceSlice per driver with
typed attributes and capacities, read from the nodes file's `devices` entries through the Node's
annotation; generated claims are named and owned as Kubernetes' resourceclaim controller does."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from services.simulator.control.resource_claims import claim_from_template
from services.simulator.kubelets.dra_drivers import node_devices, resource_slices
from services.simulator.kubelets.nodes import NodeFileError, node_object, parse_node_entry

pytestmark = pytest.mark.unit

ENTRY = {
    "name": "gpu-0",
    "devices": [
        {
            "driver": "gpu.example.com",
            "count": 2,
            "namePrefix": "gpu",
            "attributes": {"model": "a100", "cores": 108, "mig": False},
            "capacity": {"memory": "80Gi"},
        },
        {"driver": "nic.example.com", "attributes": {"speed": "400G"}},
    ],
}


def test_a_nodes_devices_become_one_slice_per_driver() -> None:
    (spec,) = parse_node_entry(ENTRY)
    node = node_object(spec, "10.0.0.1", datetime(2026, 1, 1, tzinfo=UTC))
    gpus, nics = resource_slices("gpu-0", node_devices(node))
    assert gpus["metadata"]["name"] == "gpu-0-gpu.example.com"
    assert gpus["spec"]["pool"] == {"name": "gpu-0", "generation": 1, "resourceSliceCount": 1}
    assert [d["name"] for d in gpus["spec"]["devices"]] == ["gpu-0", "gpu-1"]
    assert gpus["spec"]["devices"][0]["attributes"] == {
        "model": {"string": "a100"},
        "cores": {"int": 108},
        "mig": {"bool": False},
    }
    assert gpus["spec"]["devices"][0]["capacity"] == {"memory": {"value": "80Gi"}}
    assert [d["name"] for d in nics["spec"]["devices"]] == ["dev-0"]


def test_a_device_entry_without_a_driver_is_refused() -> None:
    with pytest.raises(NodeFileError, match="needs a driver"):
        parse_node_entry({"name": "n", "devices": [{"count": 1}]})


def test_a_generated_claim_is_owned_by_its_pod_and_named_after_it() -> None:
    pod = {"metadata": {"name": "trainer-0", "namespace": "ml", "uid": "u-1"}}
    template = {"spec": {"metadata": {"labels": {"team": "a"}}, "spec": {"devices": {"requests": []}}}}
    claim = claim_from_template(pod, "gpu", template)
    meta = claim["metadata"]
    assert meta["name"].startswith("trainer-0-gpu-")
    assert len(meta["name"]) == len("trainer-0-gpu-") + 5
    assert meta["annotations"] == {"resource.kubernetes.io/pod-claim-name": "gpu"}
    assert meta["labels"] == {"team": "a"}
    assert meta["ownerReferences"][0]["uid"] == "u-1"
    assert claim_from_template(pod, "gpu", template)["metadata"]["name"] == meta["name"]  # stable
