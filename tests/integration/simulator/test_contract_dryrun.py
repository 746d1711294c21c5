"""dryRun=All on every write: checked, admitted and answered as if made, never stored.

Follows https://kubernetes.io/docs/reference/using-api/api-concepts/#dry-run. Only the
Kubernetes API is used, so these run unchanged against a real cluster (conftest.py says how).
"""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.integration.simulator.conftest import gone, running_pod, wait_ready

pytestmark = pytest.mark.integration

DRY_RUN = "https://kubernetes.io/docs/reference/using-api/api-concepts/#dry-run"


def configmap(name: str, value: str = "1") -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": value}}


def test_a_dry_run_create_answers_the_object_and_stores_nothing(
    cluster_core: client.CoreV1Api, namespace: str
) -> None:
    """DRY_RUN: the response is the object as it would be created; it does not exist afterwards."""
    answer = cluster_core.create_namespaced_config_map(namespace, configmap("draft"), dry_run="All")

    assert answer.metadata.name == "draft"
    assert answer.data == {"k": "1"}
    assert gone(lambda: cluster_core.read_namespaced_config_map("draft", namespace))


def test_a_dry_run_create_meets_the_same_refusals(cluster_core: client.CoreV1Api, namespace: str) -> None:
    """DRY_RUN: the request goes through every stage but storage, so a taken name is still 409."""
    cluster_core.create_namespaced_config_map(namespace, configmap("taken"))
    with pytest.raises(ApiException) as refused:
        cluster_core.create_namespaced_config_map(namespace, configmap("taken"), dry_run="All")
    assert refused.value.status == 409


def test_dry_run_patch_and_replace_change_nothing(cluster_core: client.CoreV1Api, namespace: str) -> None:
    """DRY_RUN: an update's answer shows the change; the stored object and its version do not."""
    stored = cluster_core.create_namespaced_config_map(namespace, configmap("kept"))

    patched = cluster_core.patch_namespaced_config_map("kept", namespace, {"data": {"k": "2"}}, dry_run="All")
    stored.data = {"k": "3"}
    replaced = cluster_core.replace_namespaced_config_map("kept", namespace, stored, dry_run="All")

    assert patched.data == {"k": "2"}
    assert replaced.data == {"k": "3"}
    now = cluster_core.read_namespaced_config_map("kept", namespace)
    assert now.data == {"k": "1"}
    assert now.metadata.resource_version == stored.metadata.resource_version


def test_dry_run_delete_and_eviction_leave_the_objects(
    cluster_core: client.CoreV1Api, namespace: str
) -> None:
    """DRY_RUN: a delete or an eviction sent as a dry run removes nothing."""
    cluster_core.create_namespaced_config_map(namespace, configmap("stays"))
    cluster_core.create_namespaced_pod(namespace, running_pod("stays"))
    wait_ready(cluster_core, namespace, "stays")

    cluster_core.delete_namespaced_config_map("stays", namespace, dry_run="All")
    cluster_core.delete_namespaced_pod("stays", namespace, dry_run="All")
    eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name="stays", namespace=namespace))
    cluster_core.create_namespaced_pod_eviction("stays", namespace, eviction, dry_run="All")

    assert cluster_core.read_namespaced_config_map("stays", namespace).metadata.deletion_timestamp is None
    assert cluster_core.read_namespaced_pod("stays", namespace).metadata.deletion_timestamp is None


def test_a_dry_run_value_other_than_all_is_refused(cluster_core: client.CoreV1Api, namespace: str) -> None:
    """DRY_RUN: "All" is the only accepted value."""
    with pytest.raises(ApiException) as refused:
        cluster_core.create_namespaced_config_map(namespace, configmap("some"), dry_run="Some")
    assert refused.value.status == 400
    assert gone(lambda: cluster_core.read_namespaced_config_map("some", namespace))
