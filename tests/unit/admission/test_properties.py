"""Properties of admission over generated objects: defaulting twice changes nothing more than
once, never touches its input, its JSONPatch reproduces it exactly, and every accepted object
round-trips unchanged through the shared Volcano models."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.admission.review import mutate, validate
from services.admission.rules import (
    QueueAdmissionFacts,
    default_job,
    default_podgroup,
    default_queue,
    validate_job_create,
    validate_queue_create,
)
from services.admission.rules.patch import diff
from shared.volcano import Job, PodGroup, Queue

from .builders import admission_review, apply_patch, context, decode_patch

pytestmark = pytest.mark.unit

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CTX = context(QueueAdmissionFacts("team"), namespace_queues={"ns-a": "team"})
QUANTITIES = st.sampled_from(["1", "500m", "2", 4, "1Gi", "512Mi", "0"])


@st.composite
def tasks(draw: st.DrawFn, name: str) -> dict[str, Any]:
    replicas = draw(st.integers(0, 4))
    body: dict[str, Any] = {"replicas": replicas}
    if name or draw(st.booleans()):
        body["name"] = name
    if draw(st.booleans()):
        body["minAvailable"] = draw(st.integers(0, replicas))
    if draw(st.booleans()):
        body["maxRetry"] = draw(st.integers(0, 5))
    if draw(st.booleans()):
        body["policies"] = [
            {"event": draw(st.sampled_from(["PodFailed", "TaskCompleted"])), "action": "RestartJob"}
        ]
    pod_spec: dict[str, Any] = {
        "restartPolicy": "OnFailure",
        "containers": [
            {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": draw(QUANTITIES)}}}
        ],
    }
    if draw(st.booleans()):
        pod_spec["hostNetwork"] = True
    body["template"] = {"spec": pod_spec}
    return body


@st.composite
def jobs(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(
        st.lists(st.sampled_from(["ps", "worker", "chief", "eval"]), min_size=1, max_size=3, unique=True)
    )
    spec: dict[str, Any] = {"tasks": [draw(tasks(name)) for name in names]}
    if draw(st.booleans()):
        spec["tasks"][0].pop("name", None)  # left for defaulting
    for key, values in {
        "queue": st.sampled_from(["", "default", "team"]),
        "schedulerName": st.sampled_from(["", "volcano"]),
        "maxRetry": st.integers(0, 5),
        "minAvailable": st.integers(0, 3),
        "plugins": st.dictionaries(
            st.sampled_from(["env", "svc", "ssh", "tensorflow", "pytorch"]), st.just([]), max_size=3
        ),
        "ttlSecondsAfterFinished": st.integers(0, 100),
        "policies": st.just([{"event": "PodEvicted", "action": "RestartJob"}]),
    }.items():
        if draw(st.booleans()):
            spec[key] = draw(values)
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": draw(st.sampled_from(["train", "job-1", "a.b"])), "namespace": "default"},
        "spec": spec,
    }


@st.composite
def queues(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for key, values in {
        "weight": st.integers(0, 10),
        "reclaimable": st.booleans(),
        "capability": st.dictionaries(st.sampled_from(["cpu", "memory"]), QUANTITIES, max_size=2),
        "deserved": st.dictionaries(st.sampled_from(["cpu", "memory"]), QUANTITIES, max_size=2),
        "guarantee": st.builds(
            lambda r: {"resource": r}, st.dictionaries(st.just("cpu"), QUANTITIES, max_size=1)
        ),
        "priority": st.integers(0, 5),
    }.items():
        if draw(st.booleans()):
            spec[key] = draw(values)
    metadata: dict[str, Any] = {"name": "q"}
    if draw(st.booleans()):
        metadata["annotations"] = {"volcano.sh/hierarchy": "sci/q", "volcano.sh/hierarchy-weights": "1/2"}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": metadata,
        "spec": spec,
    }


@SETTINGS
@given(jobs())
def test_job_defaulting_is_idempotent_and_pure(manifest: dict[str, Any]) -> None:
    original = copy.deepcopy(manifest)
    once = default_job(manifest)
    assert default_job(once) == once
    assert manifest == original


@SETTINGS
@given(queues())
def test_queue_defaulting_is_idempotent(manifest: dict[str, Any]) -> None:
    once = default_queue(manifest)
    assert default_queue(once) == once


@SETTINGS
@given(st.sampled_from(["default", "team", "", None]), st.sampled_from(["ns-a", "default"]))
def test_podgroup_defaulting_is_idempotent(queue: str | None, namespace: str) -> None:
    manifest: dict[str, Any] = {"metadata": {"name": "pg", "namespace": namespace}, "spec": {"minMember": 1}}
    if queue is not None:
        manifest["spec"]["queue"] = queue
    once = default_podgroup(manifest, CTX)
    assert default_podgroup(once, CTX) == once
    assert (
        PodGroup.model_validate(once).to_manifest()
        == {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup"} | once
    )


@SETTINGS
@given(jobs())
def test_mutating_webhook_patch_gives_the_defaulted_job(manifest: dict[str, Any]) -> None:
    response = mutate(admission_review(manifest), CTX)["response"]
    assert apply_patch(manifest, decode_patch(response)) == default_job(manifest)


@SETTINGS
@given(jobs())
def test_accepted_jobs_round_trip_unchanged(manifest: dict[str, Any]) -> None:
    defaulted = default_job(manifest)
    if validate_job_create(defaulted, CTX):
        return  # refused jobs have nothing to promise here
    assert Job.model_validate(defaulted).to_manifest() == defaulted


@SETTINGS
@given(queues())
def test_accepted_queues_round_trip_unchanged(manifest: dict[str, Any]) -> None:
    defaulted = default_queue(manifest)
    if validate_queue_create(defaulted, CTX):
        return
    assert Queue.model_validate(defaulted).to_manifest() == defaulted


def test_generated_jobs_are_often_accepted() -> None:
    """Guards the round-trip property above against vacuity: most generated jobs pass."""
    accepted = 0

    @settings(max_examples=100, deadline=None, database=None)
    @given(jobs())
    def count(manifest: dict[str, Any]) -> None:
        nonlocal accepted
        accepted += not validate_job_create(default_job(manifest), CTX)

    count()
    assert accepted >= 20


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text("ab/~", max_size=3),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text("ab/~", max_size=3), children, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(JSON, JSON)
def test_patch_turns_any_document_into_any_other(before: Any, after: Any) -> None:
    assert apply_patch(before, diff(before, after)) == after


FIELDS = st.sampled_from(
    [
        "tasks",
        "replicas",
        "minAvailable",
        "name",
        "template",
        "spec",
        "containers",
        "policies",
        "event",
        "action",
        "exitCode",
        "plugins",
        "queue",
        "volumes",
        "mountPath",
        "capability",
        "deserved",
        "guarantee",
        "resource",
        "weight",
        "parent",
        "dependsOn",
        "partitionPolicy",
    ]
)
HOSTILE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.text(max_size=4)
    | st.sampled_from(["1", "-1", "lots"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(FIELDS, children, max_size=4),
    max_leaves=16,
)
KINDS = st.sampled_from(
    [
        ("batch.volcano.sh/v1alpha1", "Job"),
        ("scheduling.volcano.sh/v1beta1", "Queue"),
        ("scheduling.volcano.sh/v1beta1", "PodGroup"),
    ]
)


@settings(max_examples=200, deadline=None)
@given(KINDS, HOSTILE, HOSTILE, st.sampled_from(["CREATE", "UPDATE", "DELETE"]))
def test_review_answers_any_input_without_raising(
    kind: tuple[str, str], spec: Any, old_spec: Any, operation: str
) -> None:
    api_version, name = kind
    new = {"apiVersion": api_version, "kind": name, "metadata": {"name": "x"}, "spec": spec}
    old = new | {"spec": old_spec}
    for answer in (
        mutate(admission_review(new, operation, old=old), CTX),
        validate(admission_review(new, operation, old=old), CTX),
    ):
        assert answer["response"]["allowed"] in (True, False)
