"""The simulator serves Volcano's HyperNode (topology.volcano.sh/v1alpha1): discovered, cluster-
scoped, `hn` for short, with a status subresource, and held to its CRD's schema."""

from __future__ import annotations

import json
import urllib.request

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.simulator_thread import RunningSimulator

pytestmark = pytest.mark.integration

HYPERNODE = ("topology.volcano.sh", "v1alpha1", "hypernodes")


def leaf(name: str, tier: object = 1) -> dict[str, object]:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {
            "tier": tier,
            "tierName": "leaf",
            "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "^node-[0-3]$"}}}],
        },
    }


def test_hypernodes_are_discovered_cluster_scoped_with_their_short_name(
    api_client: client.ApiClient, simulator: RunningSimulator
) -> None:
    groups = {g.name: g for g in client.ApisApi(api_client).get_api_versions().groups}
    assert groups["topology.volcano.sh"].preferred_version.group_version == "topology.volcano.sh/v1alpha1"
    with urllib.request.urlopen(f"{simulator.url}/apis/topology.volcano.sh/v1alpha1") as response:
        listed = json.load(response)
    resources = {r["name"]: r for r in listed["resources"]}
    assert resources["hypernodes"]["namespaced"] is False
    assert resources["hypernodes"]["shortNames"] == ["hn"]
    assert resources["hypernodes"]["kind"] == "HyperNode"
    assert "hypernodes/status" in resources


def test_a_hypernode_is_created_read_listed_given_a_status_and_deleted(
    custom: client.CustomObjectsApi,
) -> None:
    created = custom.create_cluster_custom_object(*HYPERNODE, leaf("s0"))
    assert created["metadata"]["uid"]
    assert custom.get_cluster_custom_object(*HYPERNODE, "s0")["spec"]["members"][0]["selector"] == {
        "regexMatch": {"pattern": "^node-[0-3]$"}
    }
    assert [h["metadata"]["name"] for h in custom.list_cluster_custom_object(*HYPERNODE)["items"]] == ["s0"]
    custom.patch_cluster_custom_object_status(*HYPERNODE, "s0", {"status": {"nodeCount": 4}})
    assert custom.get_cluster_custom_object(*HYPERNODE, "s0")["status"] == {"nodeCount": 4}
    custom.delete_cluster_custom_object(*HYPERNODE, "s0")
    assert custom.list_cluster_custom_object(*HYPERNODE)["items"] == []


def test_a_hypernode_breaking_its_schema_is_refused_with_the_field(custom: client.CustomObjectsApi) -> None:
    with pytest.raises(ApiException) as raised:
        custom.create_cluster_custom_object(*HYPERNODE, leaf("bad", tier="one"))
    assert raised.value.status == 422
    causes = json.loads(raised.value.body)["details"]["causes"]
    assert [c["field"] for c in causes] == ["spec.tier"]
