"""Kubernetes API request latency and errors by verb and resource (`phalanx_kube_api_*`).

Every request a service sends through shared/kube/client.py is timed here, labelled as
client-go labels its `rest_client_*` metrics: the verb the API server would log (get, list,
watch, create, update, patch, delete) and the resource with its subresource (`pods/binding`).
A watch is counted, not timed: it stays open by design.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

API_LATENCY = Histogram(
    "phalanx_kube_api_request_duration_seconds",
    "Time of one Kubernetes API request, from sending it to reading its answer.",
    ["verb", "resource"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
API_ERRORS = Counter(
    "phalanx_kube_api_request_errors",
    "Kubernetes API requests that failed: an error status (`code`), or 0 when no answer came.",
    ["verb", "resource", "code"],
)
WATCHES = Counter("phalanx_kube_api_watches", "Watch streams opened.", ["resource"])

_WRITE_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def describe(method: str, path: str, query: list[tuple[str, str]] | None = None) -> tuple[str, str]:
    """(verb, resource) of a request: `GET /api/v1/namespaces/a/pods` is ("list", "pods")."""
    parts = [p for p in path.split("?")[0].split("/") if p]
    if parts[:1] == ["api"]:
        rest = parts[2:]
    elif parts[:1] == ["apis"]:
        rest = parts[3:]
    else:
        return method.lower(), "-"
    if len(rest) > 2 and rest[0] == "namespaces":
        rest = rest[2:]  # a namespaced resource
    resource = rest[0] if rest else "-"
    named = len(rest) >= 2
    if len(rest) >= 3:
        resource = f"{resource}/{rest[2]}"
    if method.upper() == "GET":
        if any(k == "watch" and v in ("true", "1") for k, v in query or []):
            return "watch", resource
        return ("get" if named else "list"), resource
    if method.upper() == "DELETE" and not named:
        return "deletecollection", resource
    return _WRITE_VERBS.get(method.upper(), method.lower()), resource
