"""The typed views over Kubernetes objects (shared/volcano/objects.py): what a service reads through
them, from well-formed objects and from the malformed shapes the dict walks used to tolerate."""

from __future__ import annotations

from typing import Any

import pytest

from shared.domain.resources import CPU, MEMORY, PODS
from shared.volcano import keys
from shared.volcano.objects import JobObject, KubeObject, PodGroupObject, PodObject, QueueObject

pytestmark = pytest.mark.unit


def _pod(**overrides: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "job-worker-0",
            "namespace": "team",
            "uid": "u-1",
            "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {keys.JOB_NAME: "job"},
            "annotations": {keys.GROUP_NAME: "job-pg", keys.TASK_SPEC: "worker"},
            "ownerReferences": [
                {"kind": "Other", "uid": "o-0"},
                {"kind": "Job", "uid": "j-1", "controller": True},
            ],
        },
        "spec": {
            "nodeName": "node-a",
            "schedulerName": "volcano",
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                {"name": "b", "resources": {"limits": {"cpu": "1"}}},
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "4"}}}],
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    pod.update(overrides)
    return pod


def test_a_pod_is_read_through_its_view() -> None:
    pod = PodObject(_pod())
    assert (pod.kind, pod.namespace, pod.name, pod.uid, pod.key) == (
        "Pod",
        "team",
        "job-worker-0",
        "u-1",
        ("team", "job-worker-0"),
    )
    assert (pod.resource_version, pod.version, pod.generation) == ("42", 42, 3)
    assert pod.creation_timestamp == "2026-01-01T00:00:00Z"
    assert (pod.deletion_timestamp, pod.deleting) == (None, False)
    assert pod.label(keys.JOB_NAME) == "job"
    assert pod.labels == {keys.JOB_NAME: "job"}
    assert pod.annotation(keys.TASK_SPEC) == "worker"
    assert pod.annotation("absent", "d") == "d"
    assert pod.group_name == "job-pg"
    assert [ref["uid"] for ref in pod.owner_references] == ["o-0", "j-1"]
    assert pod.controller_uid == "j-1"
    assert (pod.phase, pod.node_name, pod.scheduler_name) == ("Running", "node-a", "volcano")
    assert [c["type"] for c in pod.conditions] == ["Ready"]
    # The sum of the containers (a limit stands in for a missing request), raised to the init
    # container's request, and one pod.
    assert pod.requests[CPU] == 4000
    assert pod.requests[MEMORY] == 1024**3 * 1000
    assert pod.requests[PODS] == 1000


def test_the_view_wraps_the_object_without_copying_it() -> None:
    raw = _pod()
    pod = PodObject(raw)
    assert pod.raw is raw
    assert pod.meta is raw["metadata"]
    assert pod.annotations is raw["metadata"]["annotations"]


@pytest.mark.parametrize(
    "raw",
    [
        {},
        {"metadata": None, "spec": None, "status": None},
        {"metadata": "not a mapping", "spec": [], "status": 3},
        {"metadata": {"labels": None, "annotations": [], "ownerReferences": {"uid": "x"}}},
        {"metadata": {"ownerReferences": ["not a mapping", None]}},
    ],
)
def test_a_malformed_object_reads_as_empty(raw: dict[str, Any]) -> None:
    pod = PodObject(raw)
    assert (pod.kind, pod.name, pod.namespace, pod.uid) == ("", "", "", "")
    assert (pod.resource_version, pod.version, pod.generation) == ("", 0, 0)
    assert dict(pod.labels) == {}
    assert dict(pod.annotations) == {}
    assert pod.annotation(keys.GROUP_NAME) == ""
    assert list(pod.owner_references) == []
    assert pod.controller_ref is None
    assert pod.controller_uid is None
    assert (pod.phase, pod.node_name, pod.scheduler_name, pod.group_name) == ("", "", "", "")
    assert list(pod.containers) == []
    assert list(pod.conditions) == []
    assert pod.requests[PODS] == 1000
    assert dict(pod.spec) == {}
    assert dict(pod.status) == {}


def test_a_resource_version_that_is_not_an_integer_reads_as_zero() -> None:
    assert KubeObject({"metadata": {"resourceVersion": "abc"}}).version == 0


def test_a_deleting_object() -> None:
    obj = KubeObject({"metadata": {"name": "n", "deletionTimestamp": "2026-01-01T00:00:00Z"}})
    assert obj.deleting
    assert obj.deletion_timestamp == "2026-01-01T00:00:00Z"


def test_volcano_kinds() -> None:
    job = JobObject(
        {
            "kind": "Job",
            "metadata": {"name": "j", "namespace": "n"},
            "spec": {"queue": "q", "minAvailable": 2, "tasks": [{"name": "t"}], "plugins": {"svc": []}},
            "status": {"state": {"phase": "Running"}},
        }
    )
    assert (job.queue, job.min_available, [t["name"] for t in job.tasks], list(job.plugins), job.phase) == (
        "q",
        2,
        ["t"],
        ["svc"],
        "Running",
    )
    assert (JobObject({}).queue, JobObject({}).min_available, JobObject({}).phase) == ("default", 0, "")
    group = PodGroupObject(
        {
            "spec": {"queue": "q", "minMember": 3},
            "status": {"phase": "Inqueue", "conditions": [{"type": "x"}]},
        }
    )
    assert (group.queue, group.min_member, group.phase, len(group.conditions)) == ("q", 3, "Inqueue", 1)
    queue = QueueObject(
        {"metadata": {"name": "child"}, "spec": {"parent": "root"}, "status": {"state": "Open"}}
    )
    assert (queue.name, queue.namespace, queue.parent, queue.state) == ("child", "", "root", "Open")
