"""Reading and building Kubernetes objects: selectors, mounted files, evictions, manifests."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from phalanx.scenario.manifests import (
    command_manifest,
    default_queue_reset_patch,
    node_manifest,
    queue_manifest,
)
from phalanx.scenario.model import NodeEntry, QueueEntry
from phalanx.scenario.objects import (
    FileSource,
    check_selector,
    evicted_pod_uid,
    file_content,
    file_source,
    job_min_available,
    job_reached_running,
    selector_matches,
    shows_eviction,
)

pytestmark = pytest.mark.unit

LABELS = {"volcano.sh/job-name": "j1", "volcano.sh/task-spec": "worker", "tier": "gpu"}


@pytest.mark.parametrize(
    ("selector", "holds"),
    [
        ("volcano.sh/job-name=j1", True),
        ("volcano.sh/job-name==j1", True),
        ("volcano.sh/job-name=j2", False),
        ("volcano.sh/job-name=j1,volcano.sh/task-spec=worker", True),
        ("volcano.sh/job-name=j1,volcano.sh/task-spec=ps", False),
        ("tier!=cpu", True),
        ("tier", True),
        ("!tier", False),
        ("!absent", True),
        ("tier in (gpu, fpga)", True),
        ("tier notin (gpu)", False),
        ("volcano.sh/task-spec in (ps,worker),tier=gpu", True),
        ("", True),
    ],
    ids=[
        "equals",
        "double-equals",
        "differs",
        "and",
        "and-fails",
        "not-equals",
        "exists",
        "not-exists-fails",
        "not-exists",
        "in",
        "notin",
        "set-and-equals",
        "empty",
    ],
)
def test_selector_matches(selector: str, holds: bool) -> None:
    assert selector_matches(selector, LABELS) is holds


def test_unreadable_selector_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot read"):
        check_selector("a=b,=c")


SVC_POD: dict[str, Any] = {
    "metadata": {"name": "j1-worker-0", "namespace": "team-a"},
    "spec": {
        "containers": [
            {
                "name": "main",
                "volumeMounts": [
                    {"name": "j1-svc", "mountPath": "/etc/volcano"},
                    {"name": "ssh", "mountPath": "/root/.ssh/id_rsa", "subPath": "id_rsa"},
                    {"name": "picked", "mountPath": "/etc/picked/"},
                ],
            }
        ],
        "volumes": [
            {"name": "j1-svc", "configMap": {"name": "j1-svc"}},
            {"name": "ssh", "secret": {"secretName": "j1-ssh"}},
            {"name": "picked", "configMap": {"name": "cm", "items": [{"key": "k", "path": "f"}]}},
        ],
    },
}


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("/etc/volcano/worker.host", FileSource("ConfigMap", "team-a", "j1-svc", "worker.host")),
        ("/root/.ssh/id_rsa", FileSource("Secret", "team-a", "j1-ssh", "id_rsa")),
        ("/etc/picked/f", FileSource("ConfigMap", "team-a", "cm", "k")),
        ("/etc/picked/g", None),
        ("/etc/other/x", None),
        ("/etc/volcanoX/worker.host", None),
    ],
    ids=[
        "configmap-dir",
        "secret-subpath",
        "items-mapping",
        "not-in-items",
        "unmounted",
        "prefix-is-not-a-dir",
    ],
)
def test_file_source(path: str, source: FileSource | None) -> None:
    assert file_source(SVC_POD, path) == source


def test_file_content_reads_configmaps_and_decodes_secrets() -> None:
    configmap = {"kind": "ConfigMap", "data": {"worker.host": "a\nb"}}
    secret = {"kind": "Secret", "data": {"id_rsa": base64.b64encode(b"KEY").decode()}}
    assert file_content(FileSource("ConfigMap", "ns", "c", "worker.host"), configmap) == "a\nb"
    assert file_content(FileSource("Secret", "ns", "s", "id_rsa"), secret) == "KEY"
    assert file_content(FileSource("ConfigMap", "ns", "c", "nope"), configmap) is None
    assert file_content(FileSource("ConfigMap", "ns", "c", "worker.host"), None) is None


def _job(min_available: int | None, replicas: tuple[int, ...] = (1, 2)) -> dict[str, Any]:
    spec: dict[str, Any] = {"tasks": [{"name": f"t{i}", "replicas": r} for i, r in enumerate(replicas)]}
    if min_available is not None:
        spec["minAvailable"] = min_available
    return {"metadata": {"name": "j1", "namespace": "default"}, "spec": spec}


def _pod(phase: str, job: str = "j1", namespace: str = "default") -> dict[str, Any]:
    return {
        "metadata": {"namespace": namespace, "labels": {"volcano.sh/job-name": job}},
        "status": {"phase": phase},
    }


@pytest.mark.parametrize(
    ("job", "pods", "started"),
    [
        (_job(2), [_pod("Running"), _pod("Running"), _pod("Pending")], True),
        (_job(2), [_pod("Running"), _pod("Pending")], False),
        (_job(None), [_pod("Running"), _pod("Running")], False),
        (_job(None), [_pod("Running")] * 3, True),
        (_job(1), [_pod("Running", job="j2"), _pod("Running", namespace="x")], False),
        (_job(1), [_pod("Succeeded")], False),
    ],
    ids=[
        "min-available-running",
        "too-few",
        "default-is-every-replica",
        "all-replicas",
        "other-jobs-pods",
        "finished-is-not-running",
    ],
)
def test_job_reached_running(job: dict, pods: list[dict], started: bool) -> None:
    assert job_reached_running(job, pods) is started


def test_min_available_falls_back_to_status_then_replicas() -> None:
    assert job_min_available(_job(3)) == 3
    assert job_min_available({**_job(None), "status": {"minAvailable": 2}}) == 2
    assert job_min_available(_job(None, (4, 4))) == 8


@pytest.mark.parametrize(
    ("status", "evicted"),
    [
        (
            {
                "conditions": [
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": "PreemptionByScheduler",
                    }
                ]
            },
            True,
        ),
        ({"conditions": [{"type": "Ready", "status": "False", "reason": "Evict"}]}, True),
        ({"phase": "Failed", "reason": "Evicted"}, True),
        ({"conditions": [{"type": "DisruptionTarget", "status": "False"}]}, False),
        ({"phase": "Failed", "reason": "Error"}, False),
        ({}, False),
    ],
    ids=[
        "disruption-target",
        "volcano-ready-evict",
        "kubelet-evicted",
        "disruption-false",
        "failed",
        "plain",
    ],
)
def test_shows_eviction(status: dict, evicted: bool) -> None:
    assert shows_eviction({"status": status}) is evicted


@pytest.mark.parametrize(
    ("event", "uid"),
    [
        ({"reason": "Evict", "involvedObject": {"kind": "Pod", "uid": "u1"}}, "u1"),
        ({"reason": "Preempted", "regarding": {"kind": "Pod", "uid": "u2"}}, "u2"),
        ({"reason": "Evict", "involvedObject": {"kind": "PodGroup", "uid": "u3"}}, None),
        ({"reason": "Scheduled", "involvedObject": {"kind": "Pod", "uid": "u4"}}, None),
    ],
    ids=["evict-event", "events-v1-preempted", "podgroup-event", "other-reason"],
)
def test_evicted_pod_uid(event: dict, uid: str | None) -> None:
    assert evicted_pod_uid(event) == uid


def test_node_manifest_reports_capacity_like_a_kubelet() -> None:
    entry = NodeEntry.model_validate(
        {
            "name": "n1",
            "cpu": 4,
            "memory": "8Gi",
            "gpu": 2,
            "extended": {"example.com/fpga": 1},
            "labels": {"zone": "a"},
            "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
        }
    )
    node = node_manifest("n1", entry)
    assert node["status"]["allocatable"] == {
        "cpu": "4",
        "memory": "8Gi",
        "pods": "110",
        "nvidia.com/gpu": "2",
        "example.com/fpga": "1",
    }
    assert node["metadata"]["labels"] == {"kubernetes.io/hostname": "n1", "zone": "a"}
    assert node["spec"]["taints"] == [{"key": "k", "value": "v", "effect": "NoSchedule"}]


def test_command_targets_and_is_owned_by_the_job() -> None:
    job = {"metadata": {"name": "j1", "namespace": "default", "uid": "u-1"}}
    command = command_manifest("default", "AbortJob", "batch.volcano.sh/v1alpha1", "Job", job)
    assert command["apiVersion"] == "bus.volcano.sh/v1alpha1"
    assert command["action"] == "AbortJob"
    assert command["metadata"]["generateName"] == "j1-abortjob-"
    assert command["target"] == command["metadata"]["ownerReferences"][0]
    assert command["target"]["uid"] == "u-1"
    assert command["target"]["kind"] == "Job"


def test_queue_manifest_uses_volcano_field_shapes() -> None:
    entry = QueueEntry.model_validate(
        {
            "name": "q1",
            "weight": 2,
            "capability": {"cpu": "4"},
            "guarantee": {"cpu": "1"},
            "reclaimable": False,
            "parent": "root",
        }
    )
    assert queue_manifest(entry)["spec"] == {
        "weight": 2,
        "capability": {"cpu": "4"},
        "guarantee": {"resource": {"cpu": "1"}},
        "reclaimable": False,
        "parent": "root",
    }


def test_default_queue_patch_clears_what_an_earlier_scenario_set() -> None:
    patch = default_queue_reset_patch(None)["spec"]
    assert patch["weight"] == 1
    assert patch["reclaimable"] is True
    assert patch["capability"] is None
