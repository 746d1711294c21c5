"""Shell: register the webhook configurations with the API server, scoped to our resources only.

The webhooks are the ones Volcano's chart registers, on the same operations, and no more
(installer/helm/chart/volcano/templates/webhooks.yaml): Jobs validated on CREATE and UPDATE and
mutated on CREATE; Queues validated on CREATE, UPDATE and DELETE and mutated on CREATE; PodGroups
validated and mutated on CREATE; HyperNodes validated on CREATE and UPDATE; Pods validated on
CREATE. Every call costs the API server a round trip per request, so an operation whose review
changes nothing is not registered: mutation only defaults a new object, and a PodGroup's updates
are its status, written by the controller once or twice per pod (each one a webhook call before;
their bounds and shapes are the CRD schema's to refuse, as kube-apiserver does for every write).
A status or binding write is a subresource, which none of these rules names, so it is never sent.

No objectSelector: a label is the user's to set, so a selector that skipped a webhook would let
any pod skip its validation. Jobs, Queues and PodGroups fail closed (Volcano's choice: an
unvalidated Job must not slip in). Pods fail open (failurePolicy Ignore): the webhook judges only
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
REPLACE_ATTEMPTS = 5
SYSTEM_NAMESPACES = ["kube-system", "kube-public", "kube-node-lease", "volcano-system"]
# (group, version, resource, validated operations, mutated operations), as Volcano registers them.
RULES: list[tuple[str, str, str, list[str], list[str]]] = [
    ("batch.volcano.sh", "v1alpha1", "jobs", ["CREATE", "UPDATE"], ["CREATE"]),
    ("scheduling.volcano.sh", "v1beta1", "queues", ["CREATE", "UPDATE", "DELETE"], ["CREATE"]),
    ("scheduling.volcano.sh", "v1beta1", "podgroups", ["CREATE"], ["CREATE"]),
    ("topology.volcano.sh", "v1alpha1", "hypernodes", ["CREATE", "UPDATE"], []),
    ("", "v1", "pods", ["CREATE"], []),
]
IGNORED_FAILURES = frozenset({"pods"})


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
            webhooks.append(
                {
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
    """Create each configuration, or replace it when it exists (a new caBundle after rotation).

    Replicas register at once: a replace that lost to another replica's (409) reads again and
    replaces that, so the last writer's bundle stands, and every replica writes the same one.
    """
    for config in configs:
        kind = KINDS[config["kind"]]
        try:
            await request(api, "POST", kind.collection(), body=config)
            continue
        except ApiError as error:
            if error.status != 409:
                raise
        for attempt in range(REPLACE_ATTEMPTS):
            existing = await request(api, "GET", kind.item(None, NAME))
            config["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
            try:
                await request(api, "PUT", kind.item(None, NAME), body=config)
                break
            except ApiError as error:
                if error.status != 409 or attempt == REPLACE_ATTEMPTS - 1:
                    raise
