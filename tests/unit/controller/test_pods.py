"""Pod, PodGroup and claim manifests exactly as Volcano's job controller builds them."""

from __future__ import annotations

from typing import Any

import pytest

from services.controller.core.jobpodgroup import (
    build_podgroup,
    min_resources,
    podgroup_needs_update,
)
from services.controller.core.pods import build_pod, build_pvc, desired_pods, volume_name

from .manifests import container, job, task

pytestmark = pytest.mark.unit

JOB_REF = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "name": "tf",
    "uid": "u-123",
    "controller": True,
    "blockOwnerDeletion": True,
}


def test_pod_names_labels_annotations_and_owner() -> None:
    j = job(task("ps", 1), task("worker", 2))
    j["status"] = {"version": 3, "retryCount": 2}
    pod = build_pod(j, 1, 1, "tf-u-123")
    assert pod["metadata"]["name"] == "tf-worker-1"
    assert pod["metadata"]["namespace"] == "team-a"
    assert pod["metadata"]["ownerReferences"] == [JOB_REF]
    assert pod["metadata"]["annotations"] == {
        "volcano.sh/task-index": "1",
        "volcano.sh/task-spec": "worker",
        "scheduling.k8s.io/group-name": "tf-u-123",
        "volcano.sh/job-name": "tf",
        "volcano.sh/queue-name": "research",
        "volcano.sh/job-version": "3",
        "volcano.sh/template-uid": "tf-worker",
        "volcano.sh/job-retry-count": "2",
    }
    assert pod["metadata"]["labels"] == {
        "volcano.sh/task-index": "1",
        "volcano.sh/job-name": "tf",
        "volcano.sh/task-spec": "worker",
        "volcano.sh/job-namespace": "team-a",
        "volcano.sh/queue-name": "research",
    }
    assert pod["spec"]["schedulerName"] == "volcano"


def test_version_and_retry_from_the_effect_override_the_status() -> None:
    pod = build_pod(job(task("worker", 1)), 0, 0, job_version=5, retry_count=4)
    assert pod["metadata"]["annotations"]["volcano.sh/job-version"] == "5"
    assert pod["metadata"]["annotations"]["volcano.sh/job-retry-count"] == "4"
    assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "tf-u-123"


@pytest.mark.parametrize(
    ("template_spec", "job_spec", "expected_scheduler", "expected_priority"),
    [
        ({}, {"priorityClassName": "high"}, "volcano", "high"),
        (
            {"schedulerName": "other", "priorityClassName": "low"},
            {"priorityClassName": "high"},
            "other",
            "low",
        ),
        ({}, {}, "volcano", None),
    ],
    ids=["inherited", "template-wins", "no-priority"],
)
def test_scheduler_and_priority_class_inheritance(
    template_spec: dict[str, Any],
    job_spec: dict[str, Any],
    expected_scheduler: str,
    expected_priority: str | None,
) -> None:
    pod = build_pod(job(task("worker", 1, **template_spec), **job_spec), 0, 0)
    assert pod["spec"]["schedulerName"] == expected_scheduler
    assert pod["spec"].get("priorityClassName") == expected_priority


def test_template_labels_and_annotations_are_kept_and_job_hints_copied() -> None:
    t = task("worker", 1)
    t["template"]["metadata"] = {"labels": {"app": "x"}, "annotations": {"note": "y"}}
    t["topologyPolicy"] = "single-numa-node"
    t["partitionPolicy"] = {"totalPartitions": 2, "partitionSize": 2}
    j = job(t)
    j["metadata"]["annotations"] = {
        "volcano.sh/preemptable": "true",
        "volcano.sh/jdb-max-unavailable": "10%",
        "unrelated": "no",
    }
    j["metadata"]["labels"] = {"volcano.sh/cooldown-time": "600s"}
    pod = build_pod(j, 0, 3, forwarding=True)
    annotations, labels = pod["metadata"]["annotations"], pod["metadata"]["labels"]
    assert annotations["note"] == "y"
    assert labels["app"] == "x"
    assert annotations["volcano.sh/preemptable"] == "true"
    assert annotations["volcano.sh/jdb-max-unavailable"] == "10%"
    assert "unrelated" not in annotations
    assert annotations["volcano.sh/numa-topology-policy"] == "single-numa-node"
    assert labels["volcano.sh/cooldown-time"] == "600s"
    assert labels["volcano.sh/partition-id"] == "1"
    assert labels["volcano.sh/job-forwarding"] == annotations["volcano.sh/job-forwarding"] == "true"


def test_template_is_not_mutated() -> None:
    j = job(task("worker", 1), plugins={"env": []})
    build_pod(j, 0, 0)
    assert "env" not in j["spec"]["tasks"][0]["template"]["spec"]["containers"][0]


def test_job_volumes_are_mounted_in_every_container() -> None:
    t = task("worker", 1)
    t["template"]["spec"]["containers"].append(container())
    j = job(
        t,
        volumes=[
            {"mountPath": "/data", "volumeClaimName": "shared"},
            {"mountPath": "/again", "volumeClaimName": "shared"},
        ],
    )
    pod = build_pod(j, 0, 0)
    name = volume_name("tf", "shared")
    assert pod["spec"]["volumes"] == [{"name": name, "persistentVolumeClaim": {"claimName": "shared"}}]
    for c in pod["spec"]["containers"]:
        assert c["volumeMounts"] == [{"mountPath": "/data", "name": name}]
    assert build_pod(j, 0, 0) == pod  # rebuilding gives the same manifest


def test_pvc_is_owned_by_the_job() -> None:
    j = job(
        task("worker", 1),
        volumes=[
            {
                "mountPath": "/d",
                "volumeClaim": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        ],
    )
    pvc = build_pvc(j, 0, "tf-pvc-abc")
    assert pvc["metadata"] == {"name": "tf-pvc-abc", "namespace": "team-a", "ownerReferences": [JOB_REF]}
    assert pvc["spec"]["accessModes"] == ["ReadWriteOnce"]


def test_desired_pods_in_spec_order() -> None:
    assert desired_pods(job(task("ps", 1), task("worker", 2))) == [
        (0, 0, "tf-ps-0"),
        (1, 0, "tf-worker-0"),
        (1, 1, "tf-worker-1"),
    ]


def test_podgroup_of_a_job() -> None:
    j = job(task("ps", 1), task("worker", 2, min_available=1), priorityClassName="high")
    j["spec"]["minAvailable"] = 2
    j["metadata"]["labels"] = {"team": "a"}
    pg = build_podgroup(j)
    assert pg["metadata"]["name"] == "tf-u-123"
    assert pg["metadata"]["labels"] == {"team": "a"}
    assert pg["metadata"]["ownerReferences"] == [JOB_REF]
    assert pg["spec"]["minMember"] == 2
    assert pg["spec"]["minTaskMember"] == {"ps": 1, "worker": 1}
    assert pg["spec"]["queue"] == "research"
    assert pg["spec"]["priorityClassName"] == "high"
    assert pg["spec"]["minResources"] == {
        "count/pods": "2",
        "cpu": "2",
        "memory": "2Gi",
        "pods": "2",
        "requests.cpu": "2",
        "requests.memory": "2Gi",
    }


def _cpu(resources: object) -> int:
    from shared.domain.resources import CPU, Resources

    assert isinstance(resources, Resources)
    return resources[CPU] // 1000


@pytest.mark.parametrize(
    ("min_available", "priorities", "expected_cpu"),
    [
        (1, {}, 1),  # fewer than the tasks' minimums: first pods in spec order (ps: 1 cpu)
        (1, {"big": 100}, 4),  # ... but tasks with higher PriorityClass come first
        (3, {}, 1 + 4 * 2),  # exactly the minimums
        (4, {}, 1 + 4 * 2 + 4),  # minimums, then spare replicas by priority
    ],
    ids=["first-pods", "priority-order", "task-minimums", "fill-up-with-spare"],
)
def test_min_resources_follow_volcano(
    min_available: int, priorities: dict[str, int], expected_cpu: int
) -> None:
    big = task("worker", 3, min_available=2, priorityClassName="big")
    big["template"]["spec"]["containers"] = [container(cpu="4")]
    j = job(task("ps", 1, min_available=1), big)
    j["spec"]["minAvailable"] = min_available
    assert _cpu(min_resources(j, priorities)) == expected_cpu


def test_podgroup_update_only_when_volcano_fields_differ() -> None:
    j = job(task("worker", 2))
    existing = build_podgroup(j)
    existing["status"] = {"phase": "Inqueue"}
    existing["spec"]["minResources"]["cpu"] = "2000m"  # same amount, other spelling
    assert podgroup_needs_update(existing, build_podgroup(j)) is None
    j["spec"]["tasks"][0]["replicas"] = 3
    j["spec"]["minAvailable"] = 3
    updated = podgroup_needs_update(existing, build_podgroup(j))
    assert updated is not None
    assert updated["spec"]["minMember"] == 3
    assert updated["status"] == {"phase": "Inqueue"}


def test_partition_policy_becomes_sub_group_policy() -> None:
    t = task("worker", 4)
    t["partitionPolicy"] = {"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1}
    pg = build_podgroup(job(t))
    assert pg["spec"]["minTaskMember"] == {"worker": 2}
    assert pg["spec"]["subGroupPolicy"] == [
        {
            "name": "worker",
            "subGroupSize": 2,
            "minSubGroups": 1,
            "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "worker"}},
            "matchLabelKeys": ["volcano.sh/partition-id"],
        }
    ]
