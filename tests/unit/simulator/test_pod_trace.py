"""The pod trace keeps each placement change in order, and feeds the chaos oracle unchanged."""

from __future__ import annotations

import asyncio

import pytest

from phalanx.chaos.oracle import examine
from services.simulator.api import control_api
from services.simulator.kubelets.pod_status import RUN_SECONDS
from services.simulator.store.api_resources import BY_PATH, PODS
from tests.unit.simulator.conftest import SimulatedCluster
from tests.unit.simulator.test_kubelet import bind, pod

pytestmark = pytest.mark.unit
PODGROUPS = BY_PATH[("scheduling.volcano.sh", "v1beta1", "podgroups")]


def test_creation_bind_phases_and_deletion_are_recorded_but_not_other_updates(sim: SimulatedCluster) -> None:
    store = sim.cluster.store
    created = store.create(
        PODS, pod("p", cpu="2", **{RUN_SECONDS: "5", "scheduling.k8s.io/group-name": "pg"}), "default"
    )
    labelled = {**created, "metadata": {**created["metadata"], "labels": {"x": "y"}}}
    store.update(PODS, labelled)
    bind(store, "p")
    sim.timers.advance(10)
    store.delete(PODS, "default", "p")
    records = asyncio.run(control_api.handle(sim.cluster, "GET", ["audit", "trace"], None))[1]["records"]
    assert [(r["type"], r["node"], r["phase"]) for r in records] == [
        ("ADDED", "", "Pending"),
        ("MODIFIED", "node-0", "Pending"),
        ("MODIFIED", "node-0", "Running"),
        ("MODIFIED", "node-0", "Succeeded"),
        ("DELETED", "node-0", "Succeeded"),
    ]
    assert {r["group"] for r in records} == {"pg"}
    assert records[0]["requests"]["cpu"] == 2000
    assert [r["rv"] for r in records] == sorted(r["rv"] for r in records)
    verdict = examine(
        records,
        allocatable={"node-0": {"cpu": 4000, "memory": 8 * 2**30 * 1000, "pods": 110_000}},
        min_member={"default/pg": 1},
    )
    assert verdict.ok, verdict.violations
    asyncio.run(control_api.handle(sim.cluster, "DELETE", ["audit"], None))
    assert sim.cluster.trace.records == []


def test_a_pod_groups_min_member_and_queue_outlive_the_group(sim: SimulatedCluster) -> None:
    store = sim.cluster.store
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg"},
        "spec": {"minMember": 3, "queue": "capped"},
    }
    store.create(PODGROUPS, group, "default")
    store.delete(PODGROUPS, "default", "pg")
    answer = asyncio.run(control_api.handle(sim.cluster, "GET", ["audit", "trace"], None))[1]
    assert answer["minMember"] == {"default/pg": 3}
    assert answer["queue"] == {"default/pg": "capped"}
