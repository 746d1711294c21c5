from __future__ import annotations

from typing import Any

import pytest

from services.simulator.kubelets.nodes import NodeSpec
from services.simulator.kubelets.pod_status import EXIT_CODE, RUN_SECONDS
from services.simulator.store.api_resources import NODES, PODS
from services.simulator.store.errors import ApiError
from services.simulator.store.store import Store
from tests.unit.simulator.conftest import SimulatedCluster, make_cluster

pytestmark = pytest.mark.unit


def pod(name: str, cpu: str = "1", scheduler: str = "volcano", **annotations: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
            ],
        },
    }


def bind(store: Store, name: str, node: str = "node-0") -> None:
    current = store.get(PODS, "default", name)
    store.update(PODS, {**current, "spec": {**current["spec"], "nodeName": node}})


def phase(sim: SimulatedCluster, name: str) -> str:
    return sim.cluster.store.get(PODS, "default", name)["status"]["phase"]


def test_a_bound_pod_runs_after_the_start_delay_and_then_stays_running(sim: SimulatedCluster) -> None:
    store = sim.cluster.store
    store.create(PODS, pod("p"), "default")
    bind(store, "p")
    sim.timers.advance(0.5)
    assert phase(sim, "p") == "Pending"
    sim.timers.advance(0.5)
    running = store.get(PODS, "default", "p")
    assert running["status"]["phase"] == "Running"
    assert running["status"]["podIP"]
    assert running["status"]["startTime"]
    assert running["status"]["containerStatuses"][0]["ready"] is True
    sim.timers.advance(3600)
    assert phase(sim, "p") == "Running"


@pytest.mark.parametrize(
    ("annotations", "expected_phase", "exit_code", "reason"),
    [
        ({RUN_SECONDS: "5"}, "Succeeded", 0, "Completed"),
        ({RUN_SECONDS: "5", EXIT_CODE: "3"}, "Failed", 3, "Error"),
        ({RUN_SECONDS: "5", EXIT_CODE: "0"}, "Succeeded", 0, "Completed"),
    ],
    ids=["default-exit", "failing", "explicit-zero"],
)
def test_annotations_end_the_pod(
    sim: SimulatedCluster,
    annotations: dict[str, str],
    expected_phase: str,
    exit_code: int,
    reason: str,
) -> None:
    store = sim.cluster.store
    store.create(PODS, pod("p", **annotations), "default")
    bind(store, "p")
    sim.timers.advance(1.0)
    sim.timers.advance(4.9)
    assert phase(sim, "p") == "Running"
    sim.timers.advance(0.2)
    ended = store.get(PODS, "default", "p")
    assert ended["status"]["phase"] == expected_phase
    terminated = ended["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (exit_code, reason)


def test_annotating_a_running_pod_ends_it(sim: SimulatedCluster) -> None:
    store = sim.cluster.store
    store.create(PODS, pod("p"), "default")
    bind(store, "p")
    sim.timers.advance(1.0)
    running = store.get(PODS, "default", "p")
    store.update(
        PODS,
        {**running, "metadata": {**running["metadata"], "annotations": {RUN_SECONDS: "0", EXIT_CODE: "7"}}},
    )
    sim.timers.advance(0)
    assert phase(sim, "p") == "Failed"


def test_a_pod_that_does_not_fit_is_refused_out_of_cpu(sim: SimulatedCluster) -> None:
    store = sim.cluster.store
    store.create(PODS, pod("big", cpu="3"), "default")
    store.create(PODS, pod("second", cpu="2"), "default")
    bind(store, "big")
    bind(store, "second")
    refused = store.get(PODS, "default", "second")
    assert refused["status"]["phase"] == "Failed"
    assert refused["status"]["reason"] == "OutOfcpu"
    assert refused["status"]["message"] == (
        "Pod was rejected: Node didn't have enough resource: cpu, requested: 2000, used: 3000, capacity: 4000"
    )


def test_space_is_released_when_a_pod_ends(sim: SimulatedCluster) -> None:
    store, kubelets = sim.cluster.store, sim.cluster.kubelets
    store.create(PODS, pod("a", cpu="3"), "default")
    bind(store, "a")
    sim.timers.advance(1.0)
    kubelets.finish_pod("default", "a", 0)
    store.create(PODS, pod("b", cpu="3"), "default")
    bind(store, "b")
    sim.timers.advance(1.0)
    assert phase(sim, "b") == "Running"


def test_finishing_an_unbound_pod_is_a_conflict(sim: SimulatedCluster) -> None:
    sim.cluster.store.create(PODS, pod("p"), "default")
    with pytest.raises(ApiError) as raised:
        sim.cluster.kubelets.finish_pod("default", "p", 0)
    assert raised.value.code == 409


def test_removing_a_node_deletes_its_pods(sim: SimulatedCluster) -> None:
    store = sim.cluster.store
    store.create(PODS, pod("p"), "default")
    bind(store, "p")
    store.delete(NODES, "", "node-0")
    assert store.find(PODS, "default", "p") is None


def test_cordoning_adds_the_unschedulable_taint_and_uncordoning_removes_it(
    sim: SimulatedCluster,
) -> None:
    store = sim.cluster.store
    node = store.get(NODES, "", "node-0")
    store.update(NODES, {**node, "spec": {**node["spec"], "unschedulable": True}})
    taints = store.get(NODES, "", "node-0")["spec"]["taints"]
    assert {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"} in taints
    node = store.get(NODES, "", "node-0")
    store.update(NODES, {**node, "spec": {**node["spec"], "unschedulable": False}})
    assert store.get(NODES, "", "node-0")["spec"]["taints"] == []


def test_a_not_ready_node_reports_ready_false_and_its_pods_lose_readiness(
    sim: SimulatedCluster,
) -> None:
    store, kubelets = sim.cluster.store, sim.cluster.kubelets
    store.create(PODS, pod("p"), "default")
    bind(store, "p")
    sim.timers.advance(1.0)
    kubelets.set_node_ready("node-0", False)
    node = store.get(NODES, "", "node-0")
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False"
    running = store.get(PODS, "default", "p")
    assert running["status"]["phase"] == "Running"
    assert next(c for c in running["status"]["conditions"] if c["type"] == "Ready")["status"] == "False"
    kubelets.set_node_ready("node-0", True)
    assert not [
        t
        for t in store.get(NODES, "", "node-0")["spec"]["taints"]
        if t["key"] == "node.kubernetes.io/not-ready"
    ]


def test_a_node_created_through_the_api_is_registered_ready(sim: SimulatedCluster) -> None:
    store = sim.cluster.store
    store.create(NODES, {"metadata": {"name": "extra"}, "status": {"capacity": {"cpu": "2"}}})
    node = store.get(NODES, "", "extra")
    assert node["status"]["allocatable"]["cpu"] == "2"
    assert any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"])


def test_default_scheduler_pods_are_bound_to_the_first_node_that_fits() -> None:
    sim = make_cluster([NodeSpec("a", cpu="1"), NodeSpec("b", cpu="4", labels={"zone": "x"})])
    store = sim.cluster.store
    store.create(PODS, pod("small", cpu="1", scheduler="default-scheduler"), "default")
    store.create(PODS, pod("big", cpu="2", scheduler="default-scheduler"), "default")
    picky = pod("picky", cpu="1", scheduler="default-scheduler")
    picky["spec"]["nodeSelector"] = {"zone": "y"}
    store.create(PODS, picky, "default")
    store.create(PODS, pod("ours", cpu="1"), "default")
    sim.timers.advance(0)
    nodes = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in store.iterate(PODS)}
    assert nodes == {"small": "a", "big": "b", "picky": None, "ours": None}
    scheduled = store.get(PODS, "default", "picky")["status"]["conditions"][0]
    assert (scheduled["type"], scheduled["status"], scheduled["reason"]) == (
        "PodScheduled",
        "False",
        "Unschedulable",
    )


def test_the_default_scheduler_can_be_switched_off() -> None:
    sim = make_cluster(default_scheduler=False)
    sim.cluster.store.create(PODS, pod("p", scheduler="default-scheduler"), "default")
    sim.timers.advance(5)
    assert sim.cluster.store.get(PODS, "default", "p")["spec"].get("nodeName") is None
