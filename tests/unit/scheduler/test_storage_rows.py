"""Claims, volumes and StorageClasses from the manifests the watcher publishes to the task's
volume needs: `projection.project` keeps them in `storage_objects` rows and `build_snapshot`
resolves a pending pod's claims against them each cycle (#16 Volumes)."""

from __future__ import annotations

from typing import Any

import pytest

from services.scheduler.core.volumes import NO_VOLUME_TO_BIND, UNBOUND_IMMEDIATE, VOLUME_NODE_CONFLICT
from services.scheduler.snapshot_reader import ShellMemory, build_snapshot
from tests.unit.scheduler.builders import NOW
from tests.unit.scheduler.test_pod_fields import pod, row

pytestmark = pytest.mark.unit

DISK_A = {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["a"]}]}


def _meta(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "uid": f"uid-{name}", **extra}


def storage_class(name: str, mode: str, default: bool = False) -> Any:
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    return row("StorageClass", {"metadata": _meta(name, annotations=annotations), "volumeBindingMode": mode})


def volume(name: str, class_name: str, claimed_by: str | None = None) -> Any:
    spec: dict[str, Any] = {
        "storageClassName": class_name,
        "capacity": {"storage": "10Gi"},
        "accessModes": ["ReadWriteOnce"],
        "nodeAffinity": {"required": {"nodeSelectorTerms": [DISK_A]}},
    }
    if claimed_by:
        spec["claimRef"] = {"namespace": "default", "name": claimed_by}
    return row("PersistentVolume", {"metadata": _meta(name), "spec": spec})


def claim(name: str, class_name: str | None, volume_name: str = "") -> Any:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if class_name is not None:
        spec["storageClassName"] = class_name
    if volume_name:
        spec["volumeName"] = volume_name
    return row("PersistentVolumeClaim", {"metadata": _meta(name, namespace="default"), "spec": spec})


def needs_of(claim_name: str, storage: list[Any]) -> Any:
    mounting = pod("p", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": claim_name}}])
    group = row("PodGroup", {"metadata": _meta("pg", namespace="default"), "spec": {"minMember": 1}})
    snapshot = build_snapshot(
        now=NOW,
        queues=[],
        nodes=[],
        priority_classes=[],
        groups=[group],
        pods=[row("Pod", mounting)],
        decisions=[],
        memory=ShellMemory(),
        storage=storage,
    )
    (task,) = snapshot.gangs[0].tasks
    return task.volume_needs


def test_a_bound_claim_carries_its_volumes_node_affinity() -> None:
    (need,) = needs_of("data", [claim("data", "local", "pv-a"), volume("pv-a", "local", "data")])
    assert need.reason == VOLUME_NODE_CONFLICT
    assert need.choices == ((DISK_A,),)


def test_an_unbound_wait_for_first_consumer_claim_may_use_any_free_volume_of_its_class() -> None:
    storage = [
        storage_class("local", "WaitForFirstConsumer", default=True),
        claim("data", None),  # no class named: the default class
        volume("pv-free", "local"),
        volume("pv-taken", "local", claimed_by="other"),
    ]
    (need,) = needs_of("data", storage)
    assert need.reason == NO_VOLUME_TO_BIND
    assert need.choices == ((DISK_A,),)


def test_an_unbound_claim_of_an_immediate_class_waits() -> None:
    storage = [storage_class("fast", "Immediate"), claim("data", "fast"), volume("pv", "fast")]
    (need,) = needs_of("data", storage)
    assert need.reason == UNBOUND_IMMEDIATE


def test_a_pod_without_claims_has_no_needs() -> None:
    group = row("PodGroup", {"metadata": _meta("pg", namespace="default"), "spec": {"minMember": 1}})
    snapshot = build_snapshot(
        now=NOW,
        queues=[],
        nodes=[],
        priority_classes=[],
        groups=[group],
        pods=[row("Pod", pod("plain"))],
        decisions=[],
        memory=ShellMemory(),
        storage=[volume("pv", "local")],
    )
    assert snapshot.gangs[0].tasks[0].volume_needs == ()
