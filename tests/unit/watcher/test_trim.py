"""What leaves the cluster: events carry no environment, commands or managedFields, and every
event fits the bus, whatever the object's size; an object no trimming fits becomes a reference."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.watcher.translate import to_message, view_of
from services.watcher.trim import LAST_APPLIED
from shared.volcano.redaction import REDACTED, is_redacted

pytestmark = pytest.mark.unit
LIMIT = 1024 * 1024 - 4096


def pod(*, env_bytes: int = 10, annotation_bytes: int = 0, containers: int = 1) -> dict[str, Any]:
    annotations = {"scheduling.k8s.io/group-name": "job-a", LAST_APPLIED: "{...}"}
    if annotation_bytes:
        annotations["note"] = "n" * annotation_bytes
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "job-a-worker-0",
            "namespace": "default",
            "uid": "u-1",
            "resourceVersion": "7",
            "labels": {"app": "a"},
            "annotations": annotations,
            "managedFields": [{"manager": "kubectl"}],
        },
        "spec": {
            "schedulerName": "volcano",
            "containers": [
                {
                    "name": f"c{index}",
                    "image": "busybox",
                    "command": ["sh", "-c", "sleep 1"],
                    "env": [{"name": "TOKEN", "value": "s" * env_bytes}],
                    "resources": {"requests": {"cpu": "1"}},
                }
                for index in range(containers)
            ],
        },
    }


def test_a_pod_event_carries_no_environment_command_or_managed_fields() -> None:
    message = to_message("Pod", "ADDED", view_of("Pod", pod(env_bytes=1_400_000)), max_bytes=LIMIT)
    assert len(message.payload) < 10_000
    assert message.data.complete
    sent = orjson.loads(message.payload)["data"]["object"]
    container = sent["spec"]["containers"][0]
    assert "env" not in container
    assert "command" not in container
    assert container["resources"] == {"requests": {"cpu": "1"}}
    assert "managedFields" not in sent["metadata"]
    assert LAST_APPLIED not in sent["metadata"]["annotations"]
    assert sent["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "job-a"
    assert "spec.containers[*].env" in message.data.trimmed


def test_long_annotations_go_only_when_the_event_would_not_fit() -> None:
    small = to_message("Pod", "ADDED", view_of("Pod", pod(annotation_bytes=8000)), max_bytes=LIMIT)
    assert "note" in small.data.object["metadata"]["annotations"]
    large = to_message("Pod", "ADDED", view_of("Pod", pod(annotation_bytes=1_200_000)), max_bytes=LIMIT)
    assert len(large.payload) <= LIMIT
    assert large.data.complete
    assert "note" not in large.data.object["metadata"]["annotations"]
    assert "metadata.annotations[note]" in large.data.trimmed


def test_an_object_no_trimming_fits_is_published_as_a_reference() -> None:
    huge_template = {"spec": {"containers": [{"args": ["x" * 1_400_000]}]}}
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "big", "namespace": "default", "uid": "u-2", "resourceVersion": "9"},
        "spec": {"tasks": [{"name": "t", "template": huge_template}]},
    }
    message = to_message("Job", "MODIFIED", view_of("Job", job), max_bytes=LIMIT)
    assert len(message.payload) <= LIMIT
    assert message.data.complete is False
    assert message.data.object["metadata"]["uid"] == "u-2"
    assert "spec" not in message.data.object
    assert message.event_id == "u-2:9:MODIFIED"  # the same id a full event would have had


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(["Pod", "Job", "PodGroup", "Queue", "Command"]),
    spec=JSON,
    annotations=st.dictionaries(st.text(max_size=10), st.text(max_size=50), max_size=4),
    extra=JSON,
    limit=st.integers(1000, 5000),  # the watcher never goes below 64 KiB; a bare identity fits 1000
)
def test_any_object_becomes_one_event_within_the_limit(
    kind: str, spec: Any, annotations: dict[str, str], extra: Any, limit: int
) -> None:
    obj = {
        "kind": kind,
        "metadata": {
            "name": "x",
            "namespace": "ns",
            "uid": "u",
            "resourceVersion": "3",
            "annotations": annotations,
        },
        "spec": spec,
        "status": extra,
    }
    message = to_message(kind, "MODIFIED", view_of(kind, obj), max_bytes=limit)
    assert len(message.payload) <= limit
    assert message.event_id == "u:3:MODIFIED"


def secret_job() -> dict[str, Any]:
    container = {
        "name": "main",
        "image": "busybox",
        "env": [
            {"name": "TOKEN", "value": "hunter2-very-secret"},
            {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
        ],
        "envFrom": [{"secretRef": {"name": "creds"}}],
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default", "uid": "u-j", "resourceVersion": "3"},
        "spec": {
            "tasks": [
                {"name": "w", "replicas": 2, "template": {"spec": {"containers": [container]}}},
                {"name": "odd", "template": "not an object"},
            ]
        },
    }


def test_a_job_event_carries_no_literal_environment_value_but_keeps_its_references() -> None:
    message = to_message("Job", "ADDED", view_of("Job", secret_job()), max_bytes=LIMIT)
    assert b"hunter2" not in message.payload
    sent = orjson.loads(message.payload)["data"]["object"]
    container = sent["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    assert container["env"][0] == {"name": "TOKEN", "value": REDACTED}
    assert container["env"][1]["valueFrom"] == {"secretKeyRef": {"name": "creds", "key": "token"}}
    assert container["envFrom"] == [{"secretRef": {"name": "creds"}}]
    assert is_redacted(sent)
    assert "spec.tasks[0].template.spec.containers[*].env[*].value" in message.data.trimmed


def test_a_job_without_literal_values_is_not_marked_redacted() -> None:
    job = secret_job()
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["env"].pop(0)
    message = to_message("Job", "ADDED", view_of("Job", job), max_bytes=LIMIT)
    assert not is_redacted(orjson.loads(message.payload)["data"]["object"])
    assert message.data.trimmed == []
