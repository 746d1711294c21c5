"""The policy/v1 Eviction API with PodDisruptionBudgets, as Kubernetes documents them.

Only the Kubernetes API is used, so these run unchanged against a real cluster (conftest.py
says how).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.integration.simulator.conftest import gone, running_pod, wait_ready
from tests.waiting import eventually

pytestmark = pytest.mark.integration

EVICTION_API = "https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/"
DISRUPTIONS = "https://kubernetes.io/docs/concepts/workloads/pods/disruptions/"
CONFIGURE_PDB = "https://kubernetes.io/docs/tasks/run-application/configure-pdb/"


def budget(name: str, app: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": app}}, **spec},
    }


def evict(cluster_core: client.CoreV1Api, namespace: str, name: str) -> None:
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=namespace))
    cluster_core.create_namespaced_pod_eviction(name, namespace, body)


def two_ready_pods(cluster_core: client.CoreV1Api, namespace: str, app: str) -> list[str]:
    names = [f"{app}-0", f"{app}-1"]
    for name in names:
        cluster_core.create_namespaced_pod(namespace, running_pod(name, grace=2, labels={"app": app}))
    for name in names:
        wait_ready(cluster_core, namespace, name)
    return names


def settled(cluster_policy: client.PolicyV1Api, namespace: str, name: str, **expected: int) -> Any:
    """The PDB once its status reads `expected` (the disruption controller works asynchronously)."""

    def read() -> Any:
        status = cluster_policy.read_namespaced_pod_disruption_budget(name, namespace).status
        if status is None:
            return None
        shown = {
            "expected_pods": status.expected_pods,
            "current_healthy": status.current_healthy,
            "desired_healthy": status.desired_healthy,
            "disruptions_allowed": status.disruptions_allowed,
        }
        return status if all(shown[k] == v for k, v in expected.items()) else None

    return eventually(read, within=60)


def test_the_budget_status_counts_healthy_pods(
    cluster_core: client.CoreV1Api, cluster_policy: client.PolicyV1Api, namespace: str
) -> None:
    """CONFIGURE_PDB: status.expectedPods, currentHealthy, desiredHealthy, disruptionsAllowed and
    the DisruptionAllowed condition."""
    two_ready_pods(cluster_core, namespace, "counted")
    cluster_policy.create_namespaced_pod_disruption_budget(
        namespace, budget("counted", "counted", minAvailable=1)
    )

    counts = {"expected_pods": 2, "current_healthy": 2, "desired_healthy": 1, "disruptions_allowed": 1}
    status = settled(cluster_policy, namespace, "counted", **counts)

    assert status is not None
    condition = next(c for c in status.conditions if c.type == "DisruptionAllowed")
    assert (condition.status, condition.reason) == ("True", "SufficientPods")


def test_an_eviction_the_budget_forbids_is_429_and_the_pod_stays(
    cluster_core: client.CoreV1Api, cluster_policy: client.PolicyV1Api, namespace: str
) -> None:
    """EVICTION_API: "429 Too Many Requests: the eviction is not currently allowed because of the
    configured PodDisruptionBudget"; the pod is untouched."""
    names = two_ready_pods(cluster_core, namespace, "guarded")
    cluster_policy.create_namespaced_pod_disruption_budget(
        namespace, budget("guarded", "guarded", maxUnavailable=0)
    )
    assert settled(cluster_policy, namespace, "guarded", current_healthy=2, disruptions_allowed=0)

    with pytest.raises(ApiException) as refused:
        evict(cluster_core, namespace, names[0])

    assert refused.value.status == 429
    status = json.loads(refused.value.body)
    assert status["reason"] == "TooManyRequests"
    assert status["details"]["causes"][0]["reason"] == "DisruptionBudget"
    assert cluster_core.read_namespaced_pod(names[0], namespace).metadata.deletion_timestamp is None


def test_an_allowed_eviction_spends_the_budget_and_terminates_gracefully(
    cluster_core: client.CoreV1Api, cluster_policy: client.PolicyV1Api, namespace: str
) -> None:
    """EVICTION_API: an allowed eviction deletes the pod as a graceful delete does; DISRUPTIONS:
    the budget then allows one disruption fewer, so a second eviction is refused."""
    names = two_ready_pods(cluster_core, namespace, "spent")
    cluster_policy.create_namespaced_pod_disruption_budget(
        namespace, budget("spent", "spent", minAvailable=1)
    )
    assert settled(cluster_policy, namespace, "spent", disruptions_allowed=1)

    evict(cluster_core, namespace, names[0])

    assert cluster_core.read_namespaced_pod(names[0], namespace).metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as refused:
        evict(cluster_core, namespace, names[1])
    assert refused.value.status == 429
    assert eventually(lambda: gone(lambda: cluster_core.read_namespaced_pod(names[0], namespace)), within=60)
    assert settled(
        cluster_policy, namespace, "spent", expected_pods=1, current_healthy=1, disruptions_allowed=0
    )


def test_a_pod_no_budget_covers_is_evicted(cluster_core: client.CoreV1Api, namespace: str) -> None:
    """EVICTION_API: without a budget the eviction is a graceful delete (201 Created)."""
    cluster_core.create_namespaced_pod(namespace, running_pod("free", grace=2))
    wait_ready(cluster_core, namespace, "free")

    evict(cluster_core, namespace, "free")

    assert eventually(lambda: gone(lambda: cluster_core.read_namespaced_pod("free", namespace)), within=60)
