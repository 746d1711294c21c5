from __future__ import annotations

from typing import Any

import pytest

from services.admission import registration
from services.simulator.admission.webhook_rules import AdmissionAttributes, matching_webhooks, review_request
from services.simulator.store.api_resources import BY_KIND_NAME, PODS, Kind

pytestmark = pytest.mark.unit

JOBS, QUEUES = BY_KIND_NAME["Job"], BY_KIND_NAME["Queue"]


def request(
    kind: Kind, operation: str = "CREATE", subresource: str = "", labels: dict[str, str] | None = None
) -> AdmissionAttributes:
    obj = {"metadata": {"name": "x", "namespace": "ns", "labels": labels or {}}}
    return AdmissionAttributes(operation, kind, subresource, "ns" if kind.namespaced else "", "x", obj, None)


def configuration(**webhook: Any) -> dict[str, Any]:
    rule = {
        "operations": ["CREATE", "UPDATE"],
        "apiGroups": ["batch.volcano.sh"],
        "apiVersions": ["v1alpha1"],
        "resources": ["jobs"],
    }
    return {
        "metadata": {"name": "cfg"},
        "webhooks": [
            {
                "name": "w.example.com",
                "clientConfig": {"url": "https://127.0.0.1/x"},
                "rules": [rule],
                **webhook,
            }
        ],
    }


def core_rule(resource: str) -> dict[str, Any]:
    """A webhook with one rule: every operation on `resource` of the core API group."""
    return {
        "rules": [{"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": [resource]}]
    }


@pytest.mark.parametrize(
    ("webhook", "attributes", "expected"),
    [
        ({}, request(JOBS), True),
        ({}, request(JOBS, "DELETE"), False),
        ({}, request(PODS), False),
        ({}, request(JOBS, subresource="status"), False),
        (
            {
                "rules": [
                    {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}
                ]
            },
            request(JOBS, subresource="status"),
            True,
        ),
        (
            {
                "rules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["pods/binding"],
                    }
                ]
            },
            request(PODS, subresource="binding"),
            True,
        ),
        (
            {
                "rules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": ["*"],
                        "apiVersions": ["*"],
                        "resources": ["*"],
                        "scope": "Cluster",
                    }
                ]
            },
            request(JOBS),
            False,
        ),
        (
            {
                "rules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": ["*"],
                        "apiVersions": ["*"],
                        "resources": ["*"],
                        "scope": "Cluster",
                    }
                ]
            },
            request(QUEUES),
            True,
        ),
        (
            core_rule("pods/*"),
            request(PODS, subresource="binding"),
            True,
        ),
        (core_rule("pods/*"), request(PODS), True),
        (
            core_rule("*/status"),
            request(PODS, "UPDATE", subresource="status"),
            True,
        ),
        (
            core_rule("*/status"),
            request(PODS, "UPDATE"),
            False,
        ),
        (
            core_rule("pods"),
            request(PODS, subresource="binding"),
            False,
        ),
        (
            {
                "rules": [
                    {
                        "operations": ["*"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["pods/status"],
                    }
                ]
            },
            request(PODS, subresource="binding"),
            False,
        ),
        ({"namespaceSelector": {"matchLabels": {"team": "a"}}}, request(JOBS), True),
        ({"namespaceSelector": {"matchLabels": {"team": "b"}}}, request(JOBS), False),
        ({"objectSelector": {"matchLabels": {"app": "x"}}}, request(JOBS, labels={"app": "x"}), True),
        ({"objectSelector": {"matchLabels": {"app": "x"}}}, request(JOBS), False),
    ],
    ids=[
        "match",
        "other-operation",
        "other-resource",
        "subresource-not-in-*",
        "all-subresources",
        "pods-binding",
        "cluster-scope-namespaced-kind",
        "cluster-scope-queue",
        "resource-all-subresources",
        "resource-all-subresources-and-itself",
        "any-resource-status",
        "subresource-rule-not-main-resource",
        "main-resource-rule-not-binding",
        "other-subresource",
        "namespace-selected",
        "namespace-not-selected",
        "object-selected",
        "object-not-selected",
    ],
)
def test_which_webhooks_a_request_goes_through(
    webhook: dict[str, Any], attributes: AdmissionAttributes, expected: bool
) -> None:
    found = matching_webhooks([configuration(**webhook)], attributes, {"team": "a"}, mutating=False)
    assert bool(found) is expected


def test_webhook_defaults_are_fail_and_ten_seconds() -> None:
    [webhook] = matching_webhooks([configuration()], request(JOBS), {}, mutating=True)
    assert (webhook.failure_policy, webhook.timeout_seconds, webhook.mutating) == ("Fail", 10.0, True)


def test_review_request_names_the_resource_and_operation() -> None:
    review = review_request("uid-1", request(JOBS, subresource="status"))
    body = review["request"]
    assert review["kind"] == "AdmissionReview"
    assert review["apiVersion"] == "admission.k8s.io/v1"
    assert body["uid"] == "uid-1"
    assert body["resource"] == {"group": "batch.volcano.sh", "version": "v1alpha1", "resource": "jobs"}
    assert body["kind"]["kind"] == "Job"
    assert (body["operation"], body["namespace"], body["subResource"]) == ("CREATE", "ns", "status")


PODGROUPS, EVENTS = BY_KIND_NAME["PodGroup"], BY_KIND_NAME["Event"]


@pytest.mark.parametrize(
    ("attributes", "calls"),
    [
        (request(PODS), ["validate-pods"]),  # the user's pod
        (request(PODS, "UPDATE"), []),  # the controller's annotation PATCH of it
        (request(PODS, subresource="binding"), []),  # the bind
        (request(PODS, "UPDATE", subresource="status"), []),  # the kubelet
        (request(PODGROUPS), ["mutate-podgroups", "validate-podgroups"]),  # its PodGroup
        (request(PODGROUPS, "UPDATE"), []),  # the PodGroup's status writes
        (request(JOBS, "UPDATE", subresource="status"), []),  # a Job's status writes
        (request(JOBS, "UPDATE"), ["validate-jobs"]),  # a user's change to a Job
        (request(EVENTS), []),  # the Scheduled Event
    ],
    ids=[
        "pod-create",
        "pod-update",
        "pod-binding",
        "pod-status",
        "podgroup-create",
        "podgroup-update",
        "job-status",
        "job-update",
        "event-create",
    ],
)
def test_a_pods_writes_call_only_the_webhooks_volcano_registers(
    attributes: AdmissionAttributes, calls: list[str]
) -> None:
    """Phalanx's registration (services/admission/registration.py) through kube-apiserver's
    matching: a plain pod costs one call for itself and two for its PodGroup, nothing more."""
    configs = registration.configurations(ca_pem=b"ca", base_url="https://a", service=None, timeout=5)
    found = [
        hook.name.split(".")[0]
        for mutating in (True, False)
        for hook in matching_webhooks(
            [c for c in configs if c["kind"].startswith("Mutating") is mutating],
            attributes,
            {},
            mutating=mutating,
        )
    ]
    assert found == calls
