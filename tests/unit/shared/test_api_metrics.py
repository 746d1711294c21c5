"""How a Kubernetes API request is labelled in `phalanx_kube_api_*` (shared/kube/api_metrics.py):
the verb the API server would log and the resource with its subresource."""

from __future__ import annotations

import pytest

from shared.kube.api_metrics import describe

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces/a/pods", [], ("list", "pods")),
        ("GET", "/api/v1/pods", [("limit", "500")], ("list", "pods")),
        ("GET", "/api/v1/pods", [("watch", "true")], ("watch", "pods")),
        ("GET", "/api/v1/namespaces/a/pods/p", [], ("get", "pods")),
        ("POST", "/api/v1/namespaces/a/pods", [], ("create", "pods")),
        ("POST", "/api/v1/namespaces/a/pods/p/binding", [], ("create", "pods/binding")),
        ("POST", "/api/v1/namespaces/a/pods/p/eviction", [], ("create", "pods/eviction")),
        ("PATCH", "/apis/batch.volcano.sh/v1alpha1/namespaces/a/jobs/j/status", [], ("patch", "jobs/status")),
        ("PUT", "/apis/scheduling.volcano.sh/v1beta1/queues/q", [], ("update", "queues")),
        ("DELETE", "/api/v1/namespaces/a/pods/p", [], ("delete", "pods")),
        ("DELETE", "/api/v1/namespaces/a/pods", [], ("deletecollection", "pods")),
        ("GET", "/api/v1/namespaces/a", [], ("get", "namespaces")),
        ("GET", "/api/v1/namespaces", [], ("list", "namespaces")),
        ("GET", "/version", [], ("get", "-")),
    ],
)
def test_a_request_is_labelled_by_verb_and_resource(
    method: str, path: str, query: list[tuple[str, str]], expected: tuple[str, str]
) -> None:
    assert describe(method, path, query) == expected
