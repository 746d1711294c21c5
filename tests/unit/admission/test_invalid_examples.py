"""Volcano's invalid example jobs (re-written as our own manifests) are refused with Volcano's
messages, and our valid examples pass, through the same review path a webhook uses."""

from __future__ import annotations

from typing import Any

import pytest

from services.admission.review import mutate, validate
from services.admission.rules import AdmissionContext, QueueAdmissionFacts

from .builders import DATA, admission_review, apply_patch, decode_patch, load_yaml

pytestmark = pytest.mark.unit

CASES = load_yaml(DATA / "invalid" / "cases.yaml")
CLUSTER = AdmissionContext(
    queues={
        entry["name"]: QueueAdmissionFacts(entry["name"], entry["state"], entry.get("parent", ""))
        for entry in CASES["queues"]
    },
    priority_classes=frozenset({"high-priority"}),
)


def _submit(manifest: dict[str, Any], ctx: AdmissionContext) -> dict[str, Any]:
    """What kube-apiserver does: mutate, apply the patch, then validate the result."""
    mutation = mutate(admission_review(manifest), ctx)["response"]
    assert mutation["allowed"] is True
    defaulted = apply_patch(manifest, decode_patch(mutation))
    response: dict[str, Any] = validate(admission_review(defaulted), ctx)["response"]
    return response


@pytest.mark.parametrize(("file", "expected"), CASES["cases"].items(), ids=list(CASES["cases"]))
def test_invalid_example_is_refused_with_volcanos_message(file: str, expected: dict[str, Any]) -> None:
    response = _submit(load_yaml(DATA / "invalid" / file), CLUSTER)
    assert response["allowed"] is False
    volcanos, _, ours = response["status"]["message"].partition("\ncauses:\n")
    assert volcanos == expected["message"]
    causes = response["status"]["details"]["causes"]
    assert [cause["field"] for cause in causes] == expected["fields"]
    # kubectl shows only the message: each cause's field and rule is spelled out after Volcano's.
    words = {"FieldValueInvalid": "invalid value", "FieldValueDuplicate": "duplicate value"}
    words |= {"FieldValueNotSupported": "unsupported value"}
    lines = [f"  {c['field']} ({words[c['reason']]}): {c['message']}" for c in causes]
    assert ours.splitlines() == lines


def test_every_invalid_manifest_has_an_expectation() -> None:
    files = {path.name for path in (DATA / "invalid").glob("*.yaml")} - {"cases.yaml"}
    assert files == set(CASES["cases"])


VALID = sorted((DATA / "valid").glob("*.yaml"))


@pytest.mark.parametrize("path", VALID, ids=[path.stem for path in VALID])
def test_valid_examples_are_accepted(path: Any) -> None:
    import yaml

    ctx = AdmissionContext(
        queues={
            "default": QueueAdmissionFacts("default"),
            "root": QueueAdmissionFacts("root"),
            "team-a": QueueAdmissionFacts("team-a"),
            "kuberay-test-queue": QueueAdmissionFacts("kuberay-test-queue"),
            "research": QueueAdmissionFacts(
                "research",
                capability={"cpu": 16, "memory": "64Gi"},
                deserved={"cpu": "8", "memory": "32Gi"},
                guarantee={"cpu": "2", "memory": "8Gi"},
            ),
        },
        priority_classes=frozenset({"high-priority"}),
    )
    for manifest in yaml.safe_load_all(path.read_text()):
        if manifest["kind"] == "Command":
            continue  # no webhook for Commands
        response = _submit(manifest, ctx)
        assert response == {"allowed": True, "uid": response["uid"]}, response
