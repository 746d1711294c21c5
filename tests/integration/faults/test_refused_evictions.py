"""The controller's evictions meet PodDisruptionBudgets: a 429 is retried until the decision's
time runs out, then reported; an eviction the budget allows later goes through on a retry.

Against the simulator over HTTP, which serves policy/v1 budgets and 429s as kube-apiserver does
(tests/integration/simulator/test_contract_eviction.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes_asyncio import client

from services.controller.evictions import Evictor
from services.controller.kube_writes import KubeWrites
from services.simulator.kubelets.nodes import NodeSpec
from shared.kube.client import request
from shared.messages import decisions as msg
from tests.simulator_thread import RunningSimulator, running_simulator
from tests.waiting import until

pytestmark = pytest.mark.integration
PODS = "/api/v1/namespaces/default/pods"
BUDGETS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"


# Kubelets that start pods at once, unlike the rest of the fault tests': budgets count running pods.
@pytest.fixture(scope="module")
def simulator() -> Iterator[RunningSimulator]:
    with running_simulator(
        nodes=[NodeSpec("node-0", cpu="8", memory="8Gi")], kubelet_start_delay=0.02
    ) as sim:
        yield sim


async def guarded_pods(api: client.ApiClient, app: str, min_available: int) -> list[dict[str, Any]]:
    """Two running pods labelled `app` and a budget over them."""
    pods = []
    for index in range(2):
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{app}-{index}", "labels": {"app": app}},
            "spec": {
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]
            },
        }
        pods.append(await request(api, "POST", PODS, body=body))
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}},
    }
    await request(api, "POST", BUDGETS, body=budget)

    async def healthy() -> bool:
        status = (await request(api, "GET", f"{BUDGETS}/{app}")).get("status") or {}
        return bool(status.get("currentHealthy") == 2)

    await until(healthy, "the budget counts both pods healthy")
    return pods


def eviction(pod: dict[str, Any]) -> msg.PodEviction:
    meta = pod["metadata"]
    return msg.PodEviction(
        uid=meta["uid"], namespace="default", name=meta["name"], node="node-0", reason="preempt"
    )


async def first_attempt(
    api: client.ApiClient, pod: dict[str, Any], seconds: float, outcomes: Outcomes
) -> list[str]:
    evictor = Evictor(KubeWrites(api, lambda _: None))
    return await evictor.evict_all(
        [eviction(pod)],
        datetime.now(UTC) + timedelta(seconds=seconds),
        on_evicted=outcomes.on_evicted,
        on_refused=outcomes.on_refused,
    )


class Outcomes:
    def __init__(self) -> None:
        self.evicted: list[str] = []
        self.refused: list[tuple[str, str]] = []
        self.settled = asyncio.Event()

    async def on_evicted(self, e: msg.PodEviction) -> None:
        self.evicted.append(e.name)
        self.settled.set()

    async def on_refused(self, e: msg.PodEviction, why: str) -> None:
        self.refused.append((e.name, why))
        self.settled.set()


async def test_a_refused_eviction_is_retried_and_goes_through_once_the_budget_allows(
    api: client.ApiClient,
) -> None:
    pods = await guarded_pods(api, "later", min_available=2)
    outcomes = Outcomes()

    first = await first_attempt(api, pods[0], 20, outcomes)
    assert first == ["refused"]
    await request(
        api,
        "PATCH",
        f"{BUDGETS}/later",
        body={"spec": {"minAvailable": 1}},
        content_type="application/merge-patch+json",
    )
    await asyncio.wait_for(outcomes.settled.wait(), 20)

    assert outcomes.evicted == ["later-0"]
    assert outcomes.refused == []
    victim = await request(api, "GET", f"{PODS}/later-0")
    assert victim["metadata"].get("deletionTimestamp")  # terminating for its grace period


async def test_an_eviction_refused_until_the_decision_expires_is_reported(api: client.ApiClient) -> None:
    pods = await guarded_pods(api, "never", min_available=2)
    outcomes = Outcomes()

    first = await first_attempt(api, pods[1], 2, outcomes)
    await asyncio.wait_for(outcomes.settled.wait(), 10)

    assert first == ["refused"]
    assert outcomes.evicted == []
    [(name, why)] = outcomes.refused
    assert name == "never-1"
    assert "disruption budget never needs 2 healthy pods and has 2 currently" in why
    still = await request(api, "GET", f"{PODS}/never-1")
    assert not still["metadata"].get("deletionTimestamp")
