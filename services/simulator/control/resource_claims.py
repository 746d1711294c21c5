"""A stand-in for kube-controller-manager's resourceclaim controller (Dynamic Resource Allocation).

`ClaimController` does what Kubernetes' resourceclaim controller does, from the store's events:
for a pod whose `spec.resourceClaims[]` names a `resourceClaimTemplateName`, it creates the
claim from the template (named `<pod>-<claim>-<suffix>`, owned by the pod, annotated
`resource.kubernetes.io/pod-claim-name`) and records it in the pod's
`status.resourceClaimStatuses`; once a pod has ended or is gone, it takes the pod out of its
claims' `status.reservedFor`, clears the allocation of a claim nobody holds any more, and deletes
the claims generated for that pod. It writes through `Operations`, as the real controller's
requests would. Which devices a claim gets is the scheduler's decision, written by Phalanx's
controller before it binds the pod; nothing here allocates. What the kubelets' DRA drivers
publish (ResourceSlices) is in `kubelets/dra_drivers.py`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from services.simulator.admission.operations import Operations
from services.simulator.control.work_queue import Resync
from services.simulator.kubelets import pod_status
from services.simulator.store.api_resources import BY_PATH, PODS
from services.simulator.store.history import WatchEvent
from services.simulator.store.store import Store

Obj = dict[str, Any]

DEVICE_CLASSES = BY_PATH[("resource.k8s.io", "v1", "deviceclasses")]
RESOURCE_CLAIMS = BY_PATH[("resource.k8s.io", "v1", "resourceclaims")]
CLAIM_TEMPLATES = BY_PATH[("resource.k8s.io", "v1", "resourceclaimtemplates")]
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"


def generated_claim_name(pod: Obj, claim_name: str) -> str:
    """`<pod>-<claim>-<5 characters>`, as the controller's generateName gives, but stable per pod."""
    digest = hashlib.sha256(f"{pod['metadata'].get('uid')}/{claim_name}".encode()).hexdigest()
    return f"{pod['metadata']['name']}-{claim_name}"[:57] + "-" + digest[:5]


def claim_from_template(pod: Obj, claim_name: str, template: Obj) -> Obj:
    meta = pod["metadata"]
    body = template.get("spec") or {}
    template_meta = body.get("metadata") or {}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": generated_claim_name(pod, claim_name),
            "namespace": meta.get("namespace", "default"),
            "labels": dict(template_meta.get("labels") or {}),
            "annotations": {**(template_meta.get("annotations") or {}), POD_CLAIM_NAME: claim_name},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": body.get("spec") or {},
    }


def _done(pod: Obj | None) -> bool:
    return pod is None or pod_status.is_terminal(pod)


class ClaimController(Resync):
    """Creates claims for pods from templates and releases claims of pods that are done."""

    def __init__(self, store: Store, operations: Operations, **options: Any) -> None:
        super().__init__("resourceclaim controller", **options)
        self._store, self._operations = store, operations
        for kind in (PODS, RESOURCE_CLAIMS, CLAIM_TEMPLATES):
            store.subscribe(kind, self._on_event)

    def _on_event(self, event: WatchEvent) -> None:
        if event.kind is PODS and not (event.object.get("spec") or {}).get("resourceClaims"):
            return
        self.mark()

    async def reconcile(self) -> None:
        await self._create_claims()
        await self._release_claims()

    async def _create_claims(self) -> None:
        store = self._store
        for pod in list(store.iterate(PODS)):
            wanted = (pod.get("spec") or {}).get("resourceClaims") or []
            if not wanted or pod["metadata"].get("deletionTimestamp") or _done(pod):
                continue
            namespace = pod["metadata"].get("namespace", "default")
            statuses = list((pod.get("status") or {}).get("resourceClaimStatuses") or [])
            known = {s.get("name") for s in statuses}
            added = False
            for entry in wanted:
                template_name = entry.get("resourceClaimTemplateName")
                if not template_name or entry.get("name") in known:
                    continue
                template = store.find(CLAIM_TEMPLATES, namespace, template_name)
                if template is None:
                    continue  # as Kubernetes: the pod waits until the template exists
                claim = claim_from_template(pod, str(entry["name"]), template)
                if store.find(RESOURCE_CLAIMS, namespace, claim["metadata"]["name"]) is None:
                    await self._operations.create(RESOURCE_CLAIMS, namespace, claim)
                statuses.append({"name": entry["name"], "resourceClaimName": claim["metadata"]["name"]})
                added = True
            if added:
                current = store.get(PODS, namespace, pod["metadata"]["name"])
                status = {**(current.get("status") or {}), "resourceClaimStatuses": statuses}
                await self._operations.update(
                    PODS, namespace, pod["metadata"]["name"], {**current, "status": status}, status_only=True
                )

    async def _release_claims(self) -> None:
        store = self._store
        for claim in list(store.iterate(RESOURCE_CLAIMS)):
            meta = claim["metadata"]
            namespace = meta.get("namespace", "default")
            status = claim.get("status") or {}
            reserved = status.get("reservedFor") or []
            live = [r for r in reserved if not self._pod_done(namespace, r)]
            owner = next((r for r in meta.get("ownerReferences") or [] if r.get("kind") == "Pod"), None)
            if owner is not None and self._pod_done(namespace, owner) and not meta.get("deletionTimestamp"):
                await self._operations.delete(RESOURCE_CLAIMS, namespace, meta["name"])
                continue
            if len(live) == len(reserved):
                continue
            kept = {k: v for k, v in status.items() if k not in ("reservedFor", "allocation")}
            if live:
                kept = {**status, "reservedFor": live}
            await self._operations.update(
                RESOURCE_CLAIMS, namespace, meta["name"], {**claim, "status": kept}, status_only=True
            )

    def _pod_done(self, namespace: str, reference: Mapping[str, Any]) -> bool:
        pod = self._store.find(PODS, namespace, str(reference.get("name")))
        if pod is not None and reference.get("uid") and pod["metadata"].get("uid") != reference.get("uid"):
            return True  # a new pod of the same name: the one the claim was for is gone
        return _done(pod)
