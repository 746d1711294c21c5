"""AdmissionReview handling: dispatch by kind and operation, JSONPatch mutations, Status
denials with field causes, the size limit, and never standing in the way of other objects."""

from __future__ import annotations

from typing import Any

import pytest

from services.admission.review import Webhook, mutate, review, validate
from services.admission.rules import QueueAdmissionFacts

from .builders import admission_review, apply_patch, context, decode_patch, job, podgroup, queue, task

pytestmark = pytest.mark.unit

CTX = context(QueueAdmissionFacts("closed", state="Closed"), namespace_queues={"ns-a": "closed"})


def test_response_echoes_uid_and_is_an_admission_review() -> None:
    answer = validate(admission_review(job()), CTX)
    assert answer["apiVersion"] == "admission.k8s.io/v1"
    assert answer["kind"] == "AdmissionReview"
    assert answer["response"] == {"allowed": True, "uid": "4b5a2f0e-1111-2222-3333-444455556666"}


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (job(tasks=[task(name="", replicas=2)]), {"queue": "default", "minAvailable": 2}),
        (queue("q"), {"weight": 1, "reclaimable": True}),
        (podgroup(namespace="ns-a", queue="default"), {"queue": "closed"}),
    ],
    ids=["job", "queue", "podgroup"],
)
def test_mutation_is_a_json_patch_to_the_defaulted_object(
    manifest: dict[str, Any], expected: dict[str, Any]
) -> None:
    response = mutate(admission_review(manifest), CTX)["response"]
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    patched = apply_patch(manifest, decode_patch(response))
    assert {key: patched["spec"][key] for key in expected} == expected


def test_nothing_to_default_means_no_patch() -> None:
    manifest = queue("q", weight=2, reclaimable=False)
    response = mutate(admission_review(manifest), CTX)["response"]
    assert response == {"allowed": True, "uid": response["uid"]}


def test_mutation_only_on_create() -> None:
    update = admission_review(queue("q"), "UPDATE", old=queue("q"))
    assert "patch" not in mutate(update, CTX)["response"]


def test_denial_is_a_status_with_volcanos_message_and_field_causes() -> None:
    response = validate(admission_review(job(queue="closed", minAvailable=9)), CTX)["response"]
    assert response["allowed"] is False
    status = response["status"]
    assert status["status"] == "Failure"
    assert status["reason"] == "Invalid"
    assert status["code"] == 403
    assert status["message"] == (
        "job 'minAvailable' should not be greater than total replicas in tasks; can only submit "
        "job to queue with state `Open`, queue `closed` status is `Closed`;\n"
        "causes:\n"
        "  spec.minAvailable (invalid value): job 'minAvailable' should not be greater than total "
        "replicas in tasks\n"
        "  spec.queue (invalid value): can only submit job to queue with state `Open`, queue "
        "`closed` status is `Closed`"
    )
    assert status["details"]["kind"] == "Job"
    assert status["details"]["group"] == "batch.volcano.sh"
    assert status["details"]["name"] == "job-1"
    assert status["details"]["causes"] == [
        {
            "field": "spec.minAvailable",
            "message": "job 'minAvailable' should not be greater than total replicas in tasks",
            "reason": "FieldValueInvalid",
        },
        {
            "field": "spec.queue",
            "message": "can only submit job to queue with state `Open`, queue `closed` status is `Closed`",
            "reason": "FieldValueInvalid",
        },
    ]


def test_job_update_dispatches_to_update_rules() -> None:
    old = job(minAvailable=1, queue="default", maxRetry=3, schedulerName="volcano")
    new = job(minAvailable=1, queue="other", maxRetry=3, schedulerName="volcano")
    status = validate(admission_review(new, "UPDATE", old=old), CTX)["response"]["status"]
    assert status["message"].startswith("job updates may not change fields other than")


def test_queue_delete_is_refused_as_forbidden() -> None:
    request = admission_review(None, "DELETE", old=queue("default"))
    status = validate(request, CTX)["response"]["status"]
    assert status["reason"] == "Forbidden"
    assert status["message"] == (
        "`default` queue can not be deleted\ncauses:\n"
        "  metadata.name (forbidden): `default` queue can not be deleted"
    )


def test_podgroup_to_closed_queue_is_refused() -> None:
    response = validate(admission_review(podgroup(queue="closed")), CTX)["response"]
    assert response["allowed"] is False
    assert response["status"]["details"]["causes"][0]["field"] == "spec.queue"


@pytest.mark.parametrize(
    "request_doc",
    [
        admission_review({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}),
        admission_review(job(queue="closed"), subResource="status"),
        admission_review(None, "DELETE", old=job(queue="closed")),
        admission_review(podgroup(queue="closed"), "UPDATE", old=podgroup(queue="closed")),
        admission_review(job(queue="closed"), "CONNECT"),
    ],
    ids=["pod", "status-write", "job-delete", "podgroup-update", "connect"],
)
def test_what_volcano_does_not_check_is_allowed(request_doc: dict[str, Any]) -> None:
    assert validate(request_doc, CTX)["response"]["allowed"] is True
    assert mutate(request_doc, CTX)["response"]["allowed"] is True


def test_objects_over_the_size_limit_are_refused_by_both_webhooks() -> None:
    ctx = context(max_object_bytes=2048)
    big = job()
    big["metadata"]["annotations"] = {"note": "x" * 4096}
    webhooks: tuple[Webhook, ...] = ("mutate", "validate")
    for webhook in webhooks:
        status = review(admission_review(big), ctx, webhook)["response"]["status"]
        assert status["code"] == 413
        assert status["reason"] == "RequestEntityTooLarge"
        assert "the limit is 2048 bytes" in status["message"]


def test_missing_request_is_a_bad_request() -> None:
    response = validate({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}, CTX)["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 400


def test_create_without_object_is_a_bad_request() -> None:
    request = admission_review(job())
    request["request"]["object"] = None
    assert validate(request, CTX)["response"]["status"]["code"] == 400
