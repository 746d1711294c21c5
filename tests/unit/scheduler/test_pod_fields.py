"""The pod fields #16 added, from the manifest the watcher publishes to the core's TaskInfo.

`projection.project` stores them in the pod row's placement JSON and `build_snapshot` reads them
back: gates, host ports, the preemptable opt-out, the preemption policy, and for pods of other
schedulers their labels, host ports and anti-affinity; the PodGroup's SLA annotation too.
"""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from services.scheduler.pod_fields import preemptable, sla_waiting_time
from services.scheduler.projection import project
from services.scheduler.snapshot_reader import ShellMemory, build_snapshot
from shared.messages.cluster import ObjectChanged
from tests.unit.scheduler.builders import NOW

pytestmark = pytest.mark.unit

ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "batch"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
}


def pod(name: str, *, scheduler: str = "volcano", node: str | None = None, **spec: Any) -> dict[str, Any]:
    meta = spec.pop("metadata", {})
    body: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "annotations": {"scheduling.k8s.io/group-name": "pg"},
            **meta,
        },
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {"name": "main", "resources": {"requests": {"cpu": "1"}}, **spec.pop("container", {})}
            ],
            **spec,
        },
        "status": {"phase": "Running" if node else "Pending"},
    }
    if node:
        body["spec"]["nodeName"] = node
    return body


def row(kind: str, obj: dict[str, Any]) -> SimpleNamespace:
    event = ObjectChanged(
        kind=kind,
        namespace="default",
        name=obj["metadata"]["name"],
        uid=obj["metadata"]["uid"],
        resource_version=1,
        change="ADDED",
        object=obj,
    )
    projected = project(event, {"volcano"})
    assert projected is not None
    return SimpleNamespace(**projected.values)


def snapshot_of(*pods: dict[str, Any], group_annotations: dict[str, str] | None = None) -> Any:
    group = row(
        "PodGroup",
        {
            "metadata": {
                "name": "pg",
                "namespace": "default",
                "uid": "pg-uid",
                "annotations": group_annotations or {},
            },
            "spec": {"minMember": 1},
        },
    )
    return build_snapshot(
        now=NOW,
        queues=[],
        nodes=[],
        priority_classes=[],
        groups=[group],
        pods=[row("Pod", p) for p in pods],
        decisions=[],
        memory=ShellMemory(),
    )


def test_a_plain_pod_keeps_every_default() -> None:
    (task,) = snapshot_of(pod("plain")).gangs[0].tasks
    assert (task.scheduling_gated, task.host_ports, task.preemptable, task.preemption_policy) == (
        False,
        (),
        True,
        "PreemptLowerPriority",
    )


def test_gates_ports_and_opt_outs_reach_the_task() -> None:
    marked = pod(
        "marked",
        metadata={"annotations": {"scheduling.k8s.io/group-name": "pg", "volcano.sh/preemptable": "false"}},
        schedulingGates=[{"name": "example.com/wait"}],
        preemptionPolicy="Never",
        container={"ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81}]},
    )
    (task,) = snapshot_of(marked).gangs[0].tasks
    assert task.scheduling_gated
    assert task.host_ports == (("", "TCP", 8080),)
    assert task.preemptable is False
    assert task.preemption_policy == "Never"


def test_another_schedulers_pod_brings_labels_ports_and_anti_affinity() -> None:
    other = pod(
        "proxy",
        scheduler="default-scheduler",
        node="n1",
        metadata={"labels": {"app": "proxy"}, "annotations": {}},
        affinity=ANTI,
        container={"ports": [{"containerPort": 9000, "hostPort": 9000, "protocol": "UDP"}]},
    )
    (found,) = snapshot_of(other).other_pods
    assert found.labels == {"app": "proxy"}
    assert found.host_ports == (("", "UDP", 9000),)
    assert found.anti_affinity == tuple(
        ANTI["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    )


def test_the_podgroups_sla_annotation_reaches_the_gang() -> None:
    snapshot = snapshot_of(pod("p"), group_annotations={"volcano.sh/sla-waiting-time": "1m30s"})
    assert snapshot.gangs[0].sla_waiting_time == timedelta(seconds=90)


@pytest.mark.parametrize(
    ("annotations", "labels", "expected"),
    [
        ({}, {}, True),
        ({"volcano.sh/preemptable": "false"}, {}, False),
        ({}, {"volcano.sh/preemptable": "False"}, False),
        ({"volcano.sh/preemptable": "true"}, {"volcano.sh/preemptable": "false"}, True),
        ({"volcano.sh/preemptable": "no"}, {}, False),  # Volcano reads what is not a bool as false
    ],
)
def test_preemptable_is_read_as_volcano_reads_it(
    annotations: dict[str, str], labels: dict[str, str], expected: bool
) -> None:
    assert preemptable(annotations, labels) is expected


def test_sla_waiting_time_legacy_key_and_bad_values() -> None:
    assert sla_waiting_time({"sla-waiting-time": "2s"}) == timedelta(seconds=2)
    assert sla_waiting_time({"volcano.sh/sla-waiting-time": "soon"}) is None
    assert sla_waiting_time({}) is None


def test_an_eviction_decided_but_not_carried_out_is_marked_pending_until_the_pod_terminates() -> None:
    """The pdb plugin counts such a pod against its budgets: their status does not count it yet."""
    group = row("PodGroup", {"metadata": {"name": "pg", "namespace": "default", "uid": "pg-uid"}, "spec": {}})
    terminating = pod("leaving", node="n1", metadata={"deletionTimestamp": "2026-01-01T00:00:00Z"})
    pods = [row("Pod", p) for p in (pod("decided", node="n1"), terminating, pod("staying", node="n1"))]
    evictions = [
        SimpleNamespace(kind="evict", gang_uid="pg-uid", pod_uid=f"uid-{n}") for n in ("decided", "leaving")
    ]
    snap = build_snapshot(
        now=NOW,
        queues=[],
        nodes=[],
        priority_classes=[],
        groups=[group],
        pods=pods,
        decisions=evictions,
        memory=ShellMemory(),
    )
    tasks = {t.name: (t.status, t.eviction_pending) for t in snap.gangs[0].tasks}
    assert tasks == {
        "decided": ("Releasing", True),
        "leaving": ("Releasing", False),
        "staying": ("Running", False),
    }
