"""Deletion as Kubernetes documents it: graceful pod termination, finalizers, and the garbage
collector's background, foreground and orphan propagation.

Only the Kubernetes API is used, so these run unchanged against a real cluster (conftest.py
says how). Each test names the document it follows.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests.integration.simulator.conftest import gone, running_pod, wait_ready
from tests.waiting import eventually

pytestmark = pytest.mark.integration

POD_TERMINATION = "https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination"
GARBAGE_COLLECTION = "https://kubernetes.io/docs/concepts/architecture/garbage-collection/"
FINALIZERS = "https://kubernetes.io/docs/concepts/overview/working-with-objects/finalizers/"


def owner_reference(owner: Any, kind: str = "ConfigMap", *, blocking: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": kind,
        "name": owner.metadata.name,
        "uid": owner.metadata.uid,
        "blockOwnerDeletion": blocking,
    }


def configmap(name: str, **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **metadata}}


def test_a_running_pod_terminates_for_its_grace_period_then_goes(
    cluster_core: client.CoreV1Api, namespace: str
) -> None:
    """POD_TERMINATION: deleting a running pod marks it (deletionTimestamp, the grace period)
    and it stays, Terminating, until its kubelet has stopped it; its name stays taken meanwhile."""
    cluster_core.create_namespaced_pod(namespace, running_pod("graceful", grace=3))
    wait_ready(cluster_core, namespace, "graceful")

    answer = cluster_core.delete_namespaced_pod("graceful", namespace)

    assert answer.metadata.deletion_timestamp is not None
    assert answer.metadata.deletion_grace_period_seconds == 3
    still = cluster_core.read_namespaced_pod("graceful", namespace)
    assert still.metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as taken:
        cluster_core.create_namespaced_pod(namespace, running_pod("graceful"))
    assert (taken.value.status, _reason(taken.value)) == (409, "AlreadyExists")
    assert eventually(
        lambda: gone(lambda: cluster_core.read_namespaced_pod("graceful", namespace)), within=60
    )


def test_a_watch_sees_the_termination_as_an_update_before_the_deletion(
    cluster_core: client.CoreV1Api, namespace: str
) -> None:
    """POD_TERMINATION: the marked pod is a MODIFIED event; DELETED follows once it is gone."""
    cluster_core.create_namespaced_pod(namespace, running_pod("watched", grace=2))
    wait_ready(cluster_core, namespace, "watched")
    version = cluster_core.read_namespaced_pod("watched", namespace).metadata.resource_version

    cluster_core.delete_namespaced_pod("watched", namespace)

    seen = []
    for event in watch.Watch().stream(
        cluster_core.list_namespaced_pod,
        namespace,
        resource_version=version,
        field_selector="metadata.name=watched",
        timeout_seconds=60,
    ):
        seen.append((event["type"], event["object"].metadata.deletion_timestamp is not None))
        if event["type"] == "DELETED":
            break
    assert seen[0] == ("MODIFIED", True)
    assert seen[-1][0] == "DELETED"


def test_zero_grace_period_deletes_at_once(cluster_core: client.CoreV1Api, namespace: str) -> None:
    """POD_TERMINATION (forced deletion): gracePeriodSeconds=0 removes the pod immediately."""
    cluster_core.create_namespaced_pod(namespace, running_pod("forced", grace=30))
    wait_ready(cluster_core, namespace, "forced")

    cluster_core.delete_namespaced_pod("forced", namespace, grace_period_seconds=0)

    assert gone(lambda: cluster_core.read_namespaced_pod("forced", namespace))


def test_an_unscheduled_pod_goes_at_once(cluster_core: client.CoreV1Api, namespace: str) -> None:
    """POD_TERMINATION: a pod no kubelet runs has nothing to wait for."""
    pod = running_pod("unscheduled", grace=30)
    pod["spec"]["schedulerName"] = "no-such-scheduler"
    cluster_core.create_namespaced_pod(namespace, pod)

    cluster_core.delete_namespaced_pod("unscheduled", namespace)

    assert gone(lambda: cluster_core.read_namespaced_pod("unscheduled", namespace))


def test_a_finalizer_holds_the_deletion_until_it_is_removed(
    cluster_core: client.CoreV1Api, namespace: str
) -> None:
    """FINALIZERS: the object is marked and stays until its last finalizer is removed."""
    cluster_core.create_namespaced_config_map(namespace, configmap("held", finalizers=["example.com/hold"]))

    cluster_core.delete_namespaced_config_map("held", namespace)

    held = cluster_core.read_namespaced_config_map("held", namespace)
    assert held.metadata.deletion_timestamp is not None
    assert held.metadata.finalizers == ["example.com/hold"]
    cluster_core.patch_namespaced_config_map("held", namespace, {"metadata": {"finalizers": None}})
    assert eventually(
        lambda: gone(lambda: cluster_core.read_namespaced_config_map("held", namespace)), within=30
    )


def test_foreground_deletion_keeps_the_owner_until_its_dependents_are_gone(
    cluster_core: client.CoreV1Api, namespace: str
) -> None:
    """GARBAGE_COLLECTION (foreground cascading deletion): the owner enters "deletion in
    progress" with the foregroundDeletion finalizer, the collector deletes its dependents, and the
    owner goes only when the blocking ones are gone."""
    owner = cluster_core.create_namespaced_config_map(namespace, configmap("fg-owner"))
    cluster_core.create_namespaced_pod(
        namespace, running_pod("fg-child", grace=3, owners=[owner_reference(owner)])
    )
    wait_ready(cluster_core, namespace, "fg-child")

    cluster_core.delete_namespaced_config_map("fg-owner", namespace, propagation_policy="Foreground")

    def owner_marked() -> Any:
        try:
            found = cluster_core.read_namespaced_config_map("fg-owner", namespace)
        except ApiException:
            return None
        return found if found.metadata.deletion_timestamp else None

    marked = eventually(owner_marked, within=30)
    assert marked is not None
    assert "foregroundDeletion" in (marked.metadata.finalizers or [])
    assert eventually(
        lambda: cluster_core.read_namespaced_pod("fg-child", namespace).metadata.deletion_timestamp, within=30
    )
    assert cluster_core.read_namespaced_config_map("fg-owner", namespace).metadata.deletion_timestamp
    assert eventually(
        lambda: gone(lambda: cluster_core.read_namespaced_pod("fg-child", namespace)), within=60
    )
    assert eventually(
        lambda: gone(lambda: cluster_core.read_namespaced_config_map("fg-owner", namespace)), within=60
    )


def test_background_deletion_removes_the_owner_first(cluster_core: client.CoreV1Api, namespace: str) -> None:
    """GARBAGE_COLLECTION (background cascading deletion): the owner goes at once and the
    collector deletes the dependents afterwards."""
    owner = cluster_core.create_namespaced_config_map(namespace, configmap("bg-owner"))
    cluster_core.create_namespaced_config_map(
        namespace, configmap("bg-child", ownerReferences=[owner_reference(owner)])
    )

    cluster_core.delete_namespaced_config_map("bg-owner", namespace, propagation_policy="Background")

    assert gone(lambda: cluster_core.read_namespaced_config_map("bg-owner", namespace))
    assert eventually(
        lambda: gone(lambda: cluster_core.read_namespaced_config_map("bg-child", namespace)), within=30
    )


def test_a_dependent_created_after_its_owner_went_is_collected(
    cluster_core: client.CoreV1Api, namespace: str
) -> None:
    """GARBAGE_COLLECTION (the collector deletes dependents whose owners no longer exist): a
    controller that had not yet seen its owner's deletion created the dependent; the collector
    finds no owner and deletes it, where nothing else ever would."""
    owner = cluster_core.create_namespaced_config_map(namespace, configmap("late-owner"))
    cluster_core.delete_namespaced_config_map("late-owner", namespace)

    created = cluster_core.create_namespaced_config_map(
        namespace, configmap("late-child", ownerReferences=[owner_reference(owner)])
    )

    assert created.metadata.name == "late-child"
    assert eventually(
        lambda: gone(lambda: cluster_core.read_namespaced_config_map("late-child", namespace)), within=30
    )


def test_orphan_deletion_leaves_the_dependents_without_the_reference(
    cluster_core: client.CoreV1Api, namespace: str
) -> None:
    """GARBAGE_COLLECTION (orphaned dependents): the dependents stay, the ownerReference removed."""
    owner = cluster_core.create_namespaced_config_map(namespace, configmap("or-owner"))
    cluster_core.create_namespaced_config_map(
        namespace, configmap("or-child", ownerReferences=[owner_reference(owner)])
    )

    cluster_core.delete_namespaced_config_map("or-owner", namespace, propagation_policy="Orphan")

    assert eventually(
        lambda: gone(lambda: cluster_core.read_namespaced_config_map("or-owner", namespace)), within=30
    )
    assert eventually(
        lambda: not cluster_core.read_namespaced_config_map("or-child", namespace).metadata.owner_references,
        within=30,
    )


def test_an_unknown_propagation_policy_is_refused(cluster_core: client.CoreV1Api, namespace: str) -> None:
    """GARBAGE_COLLECTION: the cluster_policy is one of Foreground, Background and Orphan."""
    cluster_core.create_namespaced_config_map(namespace, configmap("policy"))
    with pytest.raises(ApiException) as refused:
        cluster_core.delete_namespaced_config_map("policy", namespace, propagation_policy="Sideways")
    assert refused.value.status in (400, 422)


def _reason(error: ApiException) -> str:
    return str(json.loads(error.body).get("reason"))
