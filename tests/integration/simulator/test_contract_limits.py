"""What a real API server refuses, the simulator refuses, with the same codes and field causes:
request and object sizes, label and annotation syntax and size, Volcano's CRD schemas, depth.
And what a real API server accepts up to its limits (a 1.4 MiB Pod) it accepts."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.integration.simulator.conftest import pod_manifest

pytestmark = pytest.mark.integration
VOLCANO_JOB = ("batch.volcano.sh", "v1alpha1", "jobs")


def volcano_job(name: str, **spec: Any) -> dict[str, Any]:
    task = {
        "name": "w",
        "replicas": 1,
        "template": {"spec": {"containers": [{"name": "m", "image": "busybox"}]}},
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"tasks": [task]} | spec,
    }


def refused(call: Any) -> ApiException:
    with pytest.raises(ApiException) as raised:
        call()
    return raised.value


def with_env(name: str, env_bytes: int) -> dict[str, Any]:
    pod = pod_manifest(name)
    pod["spec"]["containers"][0]["env"] = [{"name": "BLOB", "value": "x" * env_bytes}]
    return pod


def test_a_pod_up_to_the_object_limit_is_accepted(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("default", with_env("big-pod", 1_400_000))
    assert len(created.spec.containers[0].env[0].value) == 1_400_000
    core.delete_namespaced_pod("big-pod", "default")


def test_an_object_beyond_what_etcd_stores_is_413(core: client.CoreV1Api) -> None:
    error = refused(lambda: core.create_namespaced_pod("default", with_env("huge-pod", 2_000_000)))
    assert error.status == 413
    assert "request is too large" in error.body


def test_a_body_beyond_the_request_limit_is_413(core: client.CoreV1Api) -> None:
    error = refused(lambda: core.create_namespaced_pod("default", with_env("huger-pod", 3_500_000)))
    assert error.status == 413
    assert "Request entity too large: limit is 3145728" in error.body


@pytest.mark.parametrize(
    ("labels", "annotations", "field", "rule"),
    [
        ({"app": "a\x00b"}, {}, "metadata.labels", "a valid label must be an empty string"),
        ({"app": "v" * 300}, {}, "metadata.labels", "must be no more than 63 characters"),
        ({"bad key!": "v"}, {}, "metadata.labels", "name part must consist of alphanumeric"),
        ({}, {"note": "n" * 300_000}, "metadata.annotations", "Too long: must have at most 262144 bytes"),
    ],
)
def test_metadata_is_held_to_kubernetes_rules(
    core: client.CoreV1Api, labels: dict[str, str], annotations: dict[str, str], field: str, rule: str
) -> None:
    pod = pod_manifest("meta-pod")
    pod["metadata"]["labels"], pod["metadata"]["annotations"] = labels, annotations
    error = refused(lambda: core.create_namespaced_pod("default", pod))
    assert error.status == 422
    assert f'"field":"{field}"' in error.body
    assert rule in error.body


@pytest.mark.parametrize(
    ("spec", "field", "rule"),
    [
        ({"tasks": {"w": {}}}, "spec.tasks", "must be of type array"),
        ({"minAvailable": "1"}, "spec.minAvailable", "must be of type integer"),
        ({"maxRetry": 2**31}, "spec.maxRetry", "should be less than or equal to 2147483647"),
        ({"queue": ["a"]}, "spec.queue", "must be of type string"),
    ],
)
def test_volcano_kinds_are_held_to_their_schema(
    custom: client.CustomObjectsApi, spec: dict[str, Any], field: str, rule: str
) -> None:
    error = refused(
        lambda: custom.create_namespaced_custom_object(
            *VOLCANO_JOB[:2], "default", VOLCANO_JOB[2], volcano_job("bad-job", **spec)
        )
    )
    assert error.status == 422
    assert f'"field":"{field}"' in error.body
    assert rule in error.body
    assert 'Job.batch.volcano.sh \\"bad-job\\" is invalid' in error.body


def test_nesting_is_bounded(custom: client.CustomObjectsApi) -> None:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(200):
        inner["x"] = {}
        inner = inner["x"]
    job = volcano_job("deep-job")
    job["spec"]["tasks"][0]["template"]["spec"]["affinity"] = deep
    error = refused(
        lambda: custom.create_namespaced_custom_object(*VOLCANO_JOB[:2], "default", VOLCANO_JOB[2], job)
    )
    assert error.status == 400  # refused as the body is decoded, before any webhook
    assert "spec.tasks[0].template.spec.affinity.x" in error.body
    assert "nesting deeper than 64 levels" in error.body
