"""What the API server refuses: unsupported field selectors (400) and changes to a Pod's
immutable spec (422). Only the Kubernetes API is used, so these run unchanged against a real
cluster (conftest.py says how).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.integration.simulator.conftest import running_pod

pytestmark = pytest.mark.integration

FIELD_SELECTORS = "https://kubernetes.io/docs/concepts/overview/working-with-objects/field-selectors/"
POD_UPDATES = "https://kubernetes.io/docs/concepts/workloads/pods/#pod-update-and-replacement"


def unscheduled_pod(name: str) -> dict:
    pod = running_pod(name)
    pod["spec"]["schedulerName"] = "no-such-scheduler"  # nothing runs it: the test needs no node
    return pod


def test_a_field_the_kind_cannot_be_selected_by_is_400(
    cluster_core: client.CoreV1Api, namespace: str
) -> None:
    """FIELD_SELECTORS: "Supported field selectors vary by Kubernetes resource type ... Using
    unsupported fields produces an error"."""
    for listing, selector in (
        (cluster_core.list_namespaced_pod, "spec.containers=x"),
        (cluster_core.list_namespaced_config_map, "data.k=v"),
    ):
        with pytest.raises(ApiException) as refused:
            listing(namespace, field_selector=selector)
        assert refused.value.status == 400
        assert "field label not supported" in json.loads(refused.value.body)["message"]


def test_the_fields_a_kind_supports_select(cluster_core: client.CoreV1Api, namespace: str) -> None:
    """FIELD_SELECTORS: metadata.name and metadata.namespace for every kind; a pod's phase."""
    cluster_core.create_namespaced_pod(namespace, unscheduled_pod("selected"))

    by_name = cluster_core.list_namespaced_pod(namespace, field_selector="metadata.name=selected")
    pending = cluster_core.list_namespaced_pod(namespace, field_selector="status.phase=Pending")

    assert [p.metadata.name for p in by_name.items] == ["selected"]
    assert [p.metadata.name for p in pending.items] == ["selected"]


def test_a_pod_spec_change_beyond_the_mutable_fields_is_422(
    cluster_core: client.CoreV1Api, namespace: str
) -> None:
    """POD_UPDATES: most of a Pod's spec cannot change once it exists; its images,
    activeDeadlineSeconds and added tolerations can."""
    cluster_core.create_namespaced_pod(namespace, unscheduled_pod("fixed"))

    with pytest.raises(ApiException) as refused:
        cluster_core.patch_namespaced_pod("fixed", namespace, {"spec": {"nodeSelector": {"zone": "a"}}})
    cluster_core.patch_namespaced_pod(
        "fixed",
        namespace,
        {"spec": {"tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]}},
    )
    cluster_core.patch_namespaced_pod("fixed", namespace, {"spec": {"activeDeadlineSeconds": 600}})

    assert refused.value.status == 422
    status = json.loads(refused.value.body)
    assert status["reason"] == "Invalid"
    assert status["details"]["causes"][0]["field"] == "spec"
    pod = cluster_core.read_namespaced_pod("fixed", namespace)
    assert pod.spec.node_selector is None
    assert pod.spec.active_deadline_seconds == 600


FIELD_VALIDATION = "https://kubernetes.io/docs/reference/using-api/api-concepts/#field-validation"
FIELD_PRUNING = "https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#field-pruning"


def raw(
    api: client.ApiClient, method: str, path: str, body: Any = None, query: Any = None
) -> tuple[int, Any]:
    """A request the typed client would refuse to send (it knows the fields): status and body."""
    _, url, headers, serialized, _ = api.param_serialize(
        method,
        path,
        query_params=query or [],
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api.call_api(method, url, header_params=headers, body=serialized)
    response.read()
    return response.status, json.loads(response.data)


def test_an_unknown_field_is_dropped_or_under_strict_refused(
    cluster_api: client.ApiClient, namespace: str
) -> None:
    """FIELD_VALIDATION: unknown fields are dropped (Ignore/Warn); Strict fails the request."""
    pods = f"/api/v1/namespaces/{namespace}/pods"
    loose = unscheduled_pod("loose")
    loose["spec"]["containers"][0]["colour"] = "blue"
    strict = unscheduled_pod("strict")
    strict["spec"]["colour"] = "blue"

    created, _ = raw(cluster_api, "POST", pods, loose)
    refused, status = raw(cluster_api, "POST", pods, strict, [("fieldValidation", "Strict")])

    assert created == 201
    _, stored = raw(cluster_api, "GET", f"{pods}/loose")
    assert "colour" not in stored["spec"]["containers"][0]
    assert refused == 400
    assert 'unknown field "spec.colour"' in status["message"]


def test_a_volcano_status_field_outside_the_crd_schema_is_pruned(
    cluster_api: client.ApiClient, namespace: str
) -> None:
    """FIELD_PRUNING: a custom resource keeps only what its CRD's structural schema declares, so a
    status field Volcano's PodGroupStatus does not have is lost."""
    custom = client.CustomObjectsApi(cluster_api)
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pruned"},
        "spec": {"minMember": 1},
        "status": {"phase": "Pending", "running": 0, "ourOwnCounter": 3},
    }
    custom.create_namespaced_custom_object("scheduling.volcano.sh", "v1beta1", namespace, "podgroups", group)

    stored = custom.get_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", namespace, "podgroups", "pruned"
    )

    assert "ourOwnCounter" not in stored.get("status", {})
