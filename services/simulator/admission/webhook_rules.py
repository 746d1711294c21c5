"""Which admission webhooks a request must go through, and what they are sent. Pure.

Given the webhook configurations in the store and one request (operation, resource,
subresource, namespace labels, object labels), `matching_webhooks` returns the webhooks whose
rules, scope, namespaceSelector and objectSelector match it, in the order kube-apiserver calls
them (configurations by name, webhooks in their listed order). `review_request` builds the
AdmissionReview those webhooks receive.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from services.simulator.store.api_resources import Kind
from services.simulator.store.selectors import from_label_selector_object


@dataclass(frozen=True)
class AdmissionAttributes:
    operation: str  # CREATE, UPDATE, DELETE, CONNECT
    kind: Kind
    subresource: str
    namespace: str
    name: str
    object: Mapping[str, Any] | None
    old_object: Mapping[str, Any] | None
    dry_run: bool = False


@dataclass(frozen=True)
class Webhook:
    name: str
    configuration: str
    client_config: Mapping[str, Any]
    failure_policy: str
    timeout_seconds: float
    mutating: bool
    side_effects: str = "None"


def _resource_matches(patterns: Iterable[str], resource: str, subresource: str) -> bool:
    """kube-apiserver's matching of a rule's resources: each pattern is `resource[/subresource]`,
    `*` any resource; a subresource `*` matches every subresource and the resource itself, none
    only the resource itself. So `pods` and `*` never match a status or binding write, and
    `pods/*` matches pods and every subresource of them."""
    for pattern in patterns:
        pattern_resource, _, pattern_subresource = pattern.partition("/")
        if pattern_resource in ("*", resource) and pattern_subresource in ("*", subresource):
            return True
    return False


def rule_matches(rule: Mapping[str, Any], request: AdmissionAttributes) -> bool:
    def listed(values: Any, value: str) -> bool:
        return "*" in (values or []) or value in (values or [])

    scope = rule.get("scope", "*")
    if scope == "Cluster" and request.kind.namespaced:
        return False
    if scope == "Namespaced" and not request.kind.namespaced:
        return False
    return (
        listed(rule.get("operations"), request.operation)
        and listed(rule.get("apiGroups"), request.kind.group)
        and listed(rule.get("apiVersions"), request.kind.version)
        and _resource_matches(rule.get("resources") or [], request.kind.plural, request.subresource)
    )


def _labels(obj: Mapping[str, Any] | None) -> Mapping[str, str]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def webhook_applies(
    webhook: Mapping[str, Any],
    request: AdmissionAttributes,
    namespace_labels: Mapping[str, str] | None,
) -> bool:
    if not any(rule_matches(rule, request) for rule in webhook.get("rules") or []):
        return False
    namespace_selector = from_label_selector_object(webhook.get("namespaceSelector"))
    if request.kind.kind == "Namespace":
        if not namespace_selector.matches_labels(_labels(request.object or request.old_object)):
            return False
    elif request.kind.namespaced and not namespace_selector.matches_labels(namespace_labels or {}):
        return False
    object_selector = from_label_selector_object(webhook.get("objectSelector"))
    if object_selector.empty:
        return True
    return any(
        object_selector.matches_labels(_labels(obj))
        for obj in (request.object, request.old_object)
        if obj is not None
    )


def matching_webhooks(
    configurations: Iterable[Mapping[str, Any]],
    request: AdmissionAttributes,
    namespace_labels: Mapping[str, str] | None,
    *,
    mutating: bool,
) -> list[Webhook]:
    return [
        Webhook(
            name=webhook["name"],
            configuration=configuration["metadata"]["name"],
            client_config=webhook.get("clientConfig") or {},
            failure_policy=webhook.get("failurePolicy", "Fail"),
            timeout_seconds=float(webhook.get("timeoutSeconds", 10)),
            mutating=mutating,
            side_effects=str(webhook.get("sideEffects") or "Unknown"),
        )
        for configuration in sorted(configurations, key=lambda c: c["metadata"]["name"])
        for webhook in configuration.get("webhooks") or []
        if webhook_applies(webhook, request, namespace_labels)
    ]


def review_request(uid: str, request: AdmissionAttributes) -> dict[str, Any]:
    kind = request.kind
    group_version_kind = {"group": kind.group, "version": kind.version, "kind": kind.kind}
    resource = {"group": kind.group, "version": kind.version, "resource": kind.plural}
    body: dict[str, Any] = {
        "uid": uid,
        "kind": group_version_kind,
        "resource": resource,
        "requestKind": group_version_kind,
        "requestResource": resource,
        "name": request.name,
        "operation": request.operation,
        "userInfo": {
            "username": "system:admin",
            "groups": ["system:masters", "system:authenticated"],
        },
        "object": request.object,
        "oldObject": request.old_object,
        "dryRun": request.dry_run,
        "options": None,
    }
    if kind.namespaced:
        body["namespace"] = request.namespace
    if request.subresource:
        body["subResource"] = request.subresource
        body["requestSubResource"] = request.subresource
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": body}
