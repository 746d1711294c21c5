"""Shell: register the webhook configurations with the API server, scoped to our resources only.

Jobs, Queues and PodGroups fail closed (Volcano's choice: an unvalidated Job must not slip in).
Pods are validated only, on CREATE, and fail open (failurePolicy Ignore): the webhook judges only
pods naming our scheduler, so an admission outage can never block anyone's pods. System
namespaces are excluded. Mutation runs before validation, as the API server orders them.
"""

from __future__ import annotations

import base64
from typing import Any

from kubernetes_asyncio import client

from shared.kube.client import ApiError, request
from shared.kube.kinds import KINDS

NAME = "phalanx-admission"
SYSTEM_NAMESPACES = ["kube-system", "kube-public", "kube-node-lease", "volcano-system"]
# (group, version, resource, validated operations, mutated operations). PodGroup updates are
# validated (hostile bounds and shapes) but not mutated: nothing is defaulted after creation.
RULES: list[tuple[str, str, str, list[str], list[str]]] = [
    ("batch.volcano.sh", "v1alpha1", "jobs", ["CREATE", "UPDATE"], ["CREATE", "UPDATE"]),
    ("scheduling.volcano.sh", "v1beta1", "queues", ["CREATE", "UPDATE", "DELETE"], ["CREATE", "UPDATE"]),
    ("scheduling.volcano.sh", "v1beta1", "podgroups", ["CREATE", "UPDATE"], ["CREATE"]),
    # Pods are validated (Volcano's budget annotations), never mutated, and under failurePolicy
    # Ignore: the webhook judges only pods naming our scheduler, and its outage blocks no pod.
    ("", "v1", "pods", ["CREATE"], []),
]
IGNORED_FAILURES = frozenset({"pods"})
# Pods that name their PodGroup are never judged (rules/pods.py); these labels mark the ones our
# controller, KubeRay and the training operator create, so the API server skips the call for them.
GANG_POD_LABELS = ("volcano.sh/job-name", "ray.io/cluster", "training.kubeflow.org/job-name")
OBJECT_SELECTORS = {
    "pods": {"matchExpressions": [{"key": key, "operator": "DoesNotExist"} for key in GANG_POD_LABELS]}
}


def configurations(
    *, ca_pem: bytes, base_url: str | None, service: tuple[str, str, int] | None, timeout: int
) -> list[dict[str, Any]]:
    built = []
    for kind, path in (
        ("MutatingWebhookConfiguration", "mutate"),
        ("ValidatingWebhookConfiguration", "validate"),
    ):
        webhooks = []
        for group, version, resource, validated, mutated in RULES:
            operations = mutated if kind.startswith("Mutating") else validated
            if not operations:
                continue
            config: dict[str, Any] = {"caBundle": base64.b64encode(ca_pem).decode()}
            if base_url:
                config["url"] = f"{base_url.rstrip('/')}/{path}"
            else:
                assert service is not None
                config["service"] = {
                    "name": service[0],
                    "namespace": service[1],
                    "port": service[2],
                    "path": f"/{path}",
                }
            selector = {"objectSelector": OBJECT_SELECTORS[resource]} if resource in OBJECT_SELECTORS else {}
            webhooks.append(
                {
                    **selector,
                    "name": f"{path}-{resource}.phalanx.volcano.sh",
                    "clientConfig": config,
                    "rules": [
                        {
                            "apiGroups": [group],
                            "apiVersions": [version],
                            "resources": [resource],
                            "operations": operations,
                            "scope": "*",
                        }
                    ],
                    "namespaceSelector": {
                        "matchExpressions": [
                            {
                                "key": "kubernetes.io/metadata.name",
                                "operator": "NotIn",
                                "values": SYSTEM_NAMESPACES,
                            }
                        ]
                    },
                    "failurePolicy": "Ignore" if resource in IGNORED_FAILURES else "Fail",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "timeoutSeconds": timeout,
                }
            )
        built.append(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": {"name": NAME},
                "webhooks": webhooks,
            }
        )
    return built


async def register(api: client.ApiClient, configs: list[dict[str, Any]]) -> None:
    """Create each configuration, or replace it when it exists (a new caBundle after rotation)."""
    for config in configs:
        kind = KINDS[config["kind"]]
        try:
            await request(api, "POST", kind.collection(), body=config)
        except ApiError as error:
            if error.status != 409:
                raise
            existing = await request(api, "GET", kind.item(None, NAME))
            config["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
            await request(api, "PUT", kind.item(None, NAME), body=config)
