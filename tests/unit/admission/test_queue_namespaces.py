"""A queue's allowed namespaces (annotation phalanx.io/allowed-namespaces) at admission."""

from __future__ import annotations

import pytest

from services.admission.rules import QueueAdmissionFacts, validate_job_create, validate_podgroup_create
from shared.volcano.keys import ALLOWED_NAMESPACES
from shared.volcano.queue_access import allowed_namespaces

from .builders import context, job, podgroup

pytestmark = pytest.mark.unit

GUARDED = QueueAdmissionFacts.from_queue(
    {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "guarded", "annotations": {ALLOWED_NAMESPACES: " team-a ,team-b,"}},
        "spec": {"weight": 1},
        "status": {"state": "Open"},
    }
)
CTX = context(GUARDED, QueueAdmissionFacts("default"))
REFUSAL = (
    "namespace `other` may not submit to queue `guarded`: its annotation "
    f"{ALLOWED_NAMESPACES} allows only team-a, team-b"
)


def test_the_annotation_is_read_as_a_list_and_unset_means_open() -> None:
    assert GUARDED.allowed_namespaces == frozenset({"team-a", "team-b"})
    assert allowed_namespaces({}) is None
    assert allowed_namespaces({ALLOWED_NAMESPACES: " , "}) is None


def test_a_job_from_another_namespace_is_refused_naming_the_queue() -> None:
    manifest = job(queue="guarded")
    manifest["metadata"]["namespace"] = "other"
    [error] = validate_job_create(manifest, CTX)
    assert (error.field, error.message, error.reason) == ("spec.queue", REFUSAL, "FieldValueForbidden")


@pytest.mark.parametrize(("namespace", "queue"), [("team-b", "guarded"), ("other", "default")])
def test_allowed_namespaces_and_open_queues_admit_jobs(namespace: str, queue: str) -> None:
    manifest = job(queue=queue)
    manifest["metadata"]["namespace"] = namespace
    assert validate_job_create(manifest, CTX) == []


def test_a_podgroup_from_another_namespace_is_refused() -> None:
    [error] = validate_podgroup_create(podgroup(namespace="other", queue="guarded"), CTX)
    assert error.message == REFUSAL
    assert validate_podgroup_create(podgroup(namespace="team-a", queue="guarded"), CTX) == []
