"""Path 2 of the fault plan: a stale decision never acts on a newer pod that reuses the name.

A restarted job deletes its pods and creates new ones of the same names. A bind or an eviction
decided for the old pod (a replayed or late decision) must find the new pod untouched: the
controller names the pod's uid as a precondition, and the simulator refuses a mismatch with 409
Conflict as kube-apiserver does.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from services.controller.kube_writes import KubeWrites
from shared.kube.client import ApiError, request

pytestmark = pytest.mark.integration


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": "volcano",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
        },
    }


async def replaced(api: client.ApiClient, name: str) -> tuple[str, str]:
    """Create a pod, delete it and create its namesake; the old and the new uid."""
    created = await request(api, "POST", "/api/v1/namespaces/default/pods", body=pod(name))
    await request(api, "DELETE", f"/api/v1/namespaces/default/pods/{name}")
    again = await request(api, "POST", "/api/v1/namespaces/default/pods", body=pod(name))
    return created["metadata"]["uid"], again["metadata"]["uid"]


async def test_a_bind_decided_for_a_replaced_pod_leaves_its_namesake_unbound(api: client.ApiClient) -> None:
    kube = KubeWrites(api, lambda _: None)
    old_uid, new_uid = await replaced(api, "worker-0")

    assert await kube.bind("default", "worker-0", "node-0", old_uid) == "gone"
    current = await request(api, "GET", "/api/v1/namespaces/default/pods/worker-0")
    assert current["metadata"]["uid"] == new_uid
    assert not current["spec"].get("nodeName")
    # The pod the decision is about binds as before.
    assert await kube.bind("default", "worker-0", "node-0", new_uid) == "bound"
    assert await kube.bind("default", "worker-0", "node-0", new_uid) == "already"


async def test_an_eviction_decided_for_a_replaced_pod_leaves_its_namesake_running(
    api: client.ApiClient,
) -> None:
    kube = KubeWrites(api, lambda _: None)
    old_uid, new_uid = await replaced(api, "worker-1")

    assert not await kube.evict("default", "worker-1", old_uid)
    current = await request(api, "GET", "/api/v1/namespaces/default/pods/worker-1")
    assert current["metadata"]["uid"] == new_uid
    assert await kube.evict("default", "worker-1", new_uid)


async def test_the_simulator_refuses_a_binding_whose_uid_names_another_pod(api: client.ApiClient) -> None:
    old_uid, _ = await replaced(api, "worker-2")
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "worker-2", "uid": old_uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-0"},
    }
    with pytest.raises(ApiError) as refused:
        await request(api, "POST", "/api/v1/namespaces/default/pods/worker-2/binding", body=binding)
    assert refused.value.status == 409
    assert "UID in precondition" in str(refused.value)
