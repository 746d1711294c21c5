"""Stand-ins for Kubernetes' Deployment, ReplicaSet and StatefulSet controllers (apps/v1).

They do what kube-controller-manager does, in the part a batch user sees: a Deployment owns one
ReplicaSet per pod template (`<deployment>-<template hash>`, the Deployment's annotations copied,
older ones scaled to zero), a ReplicaSet keeps `replicas` live pods named `<replicaset>-<suffix>`,
a StatefulSet keeps pods `<set>-0 .. <set>-(n-1)`, one at a time under OrderedReady (the default)
or all at once under Parallel, and every pod names its controller in ownerReferences. Statuses
count the pods. Pods whose template names the `volcano` scheduler get their PodGroup from
Phalanx's controller, as from Volcano's. Rolling-update pacing, revision history and PVC
templates are not simulated (docs/simulator.md).
"""

from __future__ import annotations

import hashlib
from typing import Any

from services.simulator.control.standin import Obj, Plan, View, controller_ref
from services.simulator.kubelets import pod_status
from services.simulator.store.api_resources import BY_PATH, PODS
from services.simulator.store.store import clone

DEPLOYMENTS = BY_PATH[("apps", "v1", "deployments")]
REPLICASETS = BY_PATH[("apps", "v1", "replicasets")]
STATEFULSETS = BY_PATH[("apps", "v1", "statefulsets")]

TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
# Annotations the deployment controller does not copy onto its ReplicaSets.
_NOT_COPIED = ("kubectl.kubernetes.io/last-applied-configuration", REVISION)


def _replicas(obj: Obj) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def _live(pods: list[Obj]) -> list[Obj]:
    return [p for p in pods if not p["metadata"].get("deletionTimestamp") and not pod_status.is_terminal(p)]


def _ready(pod: Obj) -> bool:
    status = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ()
    )
    return status.get("phase") == "Running" and ready


def template_hash(template: Any) -> str:
    """A short, stable digest of the pod template (the real one is an FNV hash, rendered alike)."""
    digest = hashlib.sha256(repr(_canonical(template)).encode()).digest()
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return "".join(alphabet[b % len(alphabet)] for b in digest[:10])


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _canonical(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_canonical(v) for v in value)
    return value


def _pod_from_template(owner: Obj, template: Obj, extra_labels: dict[str, str]) -> Obj:
    template = clone(template or {})
    meta = template.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "labels": {**(meta.get("labels") or {}), **extra_labels},
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [controller_ref(owner)],
        },
        "spec": template.get("spec") or {},
    }


def _workload_status(owner: Obj, pods: list[Obj], extra: dict[str, Any]) -> Obj:
    ready = [p for p in pods if _ready(p)]
    status: Obj = {
        "observedGeneration": owner["metadata"].get("generation", 1),
        "replicas": len(pods),
        "readyReplicas": len(ready),
        "availableReplicas": len(ready),
        **extra,
    }
    return {k: v for k, v in status.items() if v != 0 or k in ("replicas", "observedGeneration")}


class ReplicaSetController:
    owner_kinds = (REPLICASETS,)
    child_kinds = (PODS,)

    def plan(self, owner: Obj, view: View) -> Plan:
        plan = Plan()
        pods = view.owned(PODS, owner)
        live = _live(pods)
        wanted = _replicas(owner)
        name = owner["metadata"]["name"]
        for _ in range(wanted - len(live)):
            pod = _pod_from_template(owner, owner["spec"].get("template") or {}, {})
            pod["metadata"]["generateName"] = f"{name}-"
            plan.creates.append((PODS, pod))
        if len(live) > wanted:
            # As the ReplicaSet controller ranks them: unscheduled first, then not ready, then newest.
            ranked = sorted(
                live,
                key=lambda p: (
                    bool(p["spec"].get("nodeName")),
                    _ready(p),
                    _negated(p["metadata"].get("creationTimestamp", "")),
                ),
            )
            plan.deletes += [
                (PODS, p["metadata"]["namespace"], p["metadata"]["name"])
                for p in ranked[: len(live) - wanted]
            ]
        labelled = len(live)
        plan.status = _workload_status(owner, live, {"fullyLabeledReplicas": labelled})
        return plan


def _negated(text: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in text)


class StatefulSetController:
    owner_kinds = (STATEFULSETS,)
    child_kinds = (PODS,)

    def plan(self, owner: Obj, view: View) -> Plan:
        plan = Plan()
        name, namespace = owner["metadata"]["name"], owner["metadata"]["namespace"]
        spec = owner.get("spec") or {}
        wanted = _replicas(owner)
        parallel = spec.get("podManagementPolicy") == "Parallel"
        revision = f"{name}-{template_hash(spec.get('template'))}"
        by_ordinal: dict[int, Obj] = {}
        for pod in view.owned(PODS, owner):
            ordinal = _ordinal(name, pod["metadata"]["name"])
            if ordinal is None:
                continue
            if pod_status.is_terminal(pod) and not pod["metadata"].get("deletionTimestamp"):
                # The StatefulSet controller deletes a finished pod and makes it again.
                plan.deletes.append((PODS, namespace, pod["metadata"]["name"]))
                continue
            by_ordinal[ordinal] = pod
        for ordinal in range(wanted):
            if ordinal in by_ordinal:
                if not parallel and not _ready(by_ordinal[ordinal]):
                    break  # OrderedReady: the next pod waits for this one
                continue
            plan.creates.append((PODS, self._pod(owner, ordinal, revision)))
            if not parallel:
                break
        extra = sorted((o for o in by_ordinal if o >= wanted), reverse=True)
        for ordinal in extra[: len(extra) if parallel else 1]:  # OrderedReady scales down one at a time
            plan.deletes.append((PODS, namespace, by_ordinal[ordinal]["metadata"]["name"]))
        live = [p for o, p in by_ordinal.items() if o < wanted and not p["metadata"].get("deletionTimestamp")]
        plan.status = _workload_status(
            owner,
            live,
            {
                "currentReplicas": len(live),
                "updatedReplicas": len(live),
                "currentRevision": revision,
                "updateRevision": revision,
                "collisionCount": 0,
            },
        )
        return plan

    @staticmethod
    def _pod(owner: Obj, ordinal: int, revision: str) -> Obj:
        name = f"{owner['metadata']['name']}-{ordinal}"
        pod = _pod_from_template(
            owner,
            owner["spec"].get("template") or {},
            {
                "statefulset.kubernetes.io/pod-name": name,
                "apps.kubernetes.io/pod-index": str(ordinal),
                "controller-revision-hash": revision,
            },
        )
        pod["metadata"]["name"] = name
        pod["spec"]["hostname"] = name
        if owner["spec"].get("serviceName"):
            pod["spec"]["subdomain"] = owner["spec"]["serviceName"]
        return pod


def _ordinal(set_name: str, pod_name: str) -> int | None:
    prefix = f"{set_name}-"
    tail = pod_name[len(prefix) :] if pod_name.startswith(prefix) else ""
    return int(tail) if tail.isdigit() else None


class DeploymentController:
    owner_kinds = (DEPLOYMENTS,)
    child_kinds = (REPLICASETS,)

    def plan(self, owner: Obj, view: View) -> Plan:
        plan = Plan()
        meta, spec = owner["metadata"], owner.get("spec") or {}
        template = clone(spec.get("template") or {})
        digest = template_hash(template)
        name = f"{meta['name']}-{digest}"
        owned = view.owned(REPLICASETS, owner)
        current = next((rs for rs in owned if rs["metadata"]["name"] == name), None)
        annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in _NOT_COPIED}
        wanted = _replicas(owner)
        revision = str(
            1
            + max(
                (int((rs["metadata"].get("annotations") or {}).get(REVISION, "0") or 0) for rs in owned),
                default=0,
            )
        )
        if current is None:
            template.setdefault("metadata", {}).setdefault("labels", {})[TEMPLATE_HASH] = digest
            selector = clone(spec.get("selector") or {})
            selector.setdefault("matchLabels", {})[TEMPLATE_HASH] = digest
            plan.creates.append(
                (
                    REPLICASETS,
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "metadata": {
                            "name": name,
                            "namespace": meta["namespace"],
                            "labels": {**(template["metadata"].get("labels") or {})},
                            "annotations": {**annotations, REVISION: revision},
                            "ownerReferences": [controller_ref(owner)],
                        },
                        "spec": {"replicas": wanted, "selector": selector, "template": template},
                    },
                )
            )
        else:
            kept = (current["metadata"].get("annotations") or {}).get(REVISION, revision)
            if _replicas(current) != wanted or (current["metadata"].get("annotations") or {}) != {
                **annotations,
                REVISION: kept,
            }:
                changed = clone(current)
                changed["spec"]["replicas"] = wanted
                changed["metadata"]["annotations"] = {**annotations, REVISION: kept}
                plan.updates.append((REPLICASETS, changed))
        for old in owned:
            if old is not current and _replicas(old) != 0:  # the Recreate strategy's end state
                scaled = clone(old)
                scaled["spec"]["replicas"] = 0
                plan.updates.append((REPLICASETS, scaled))
        statuses = [rs.get("status") or {} for rs in owned]
        ready = sum(int(s.get("readyReplicas") or 0) for s in statuses)
        total = sum(int(s.get("replicas") or 0) for s in statuses)
        updated = int(((current or {}).get("status") or {}).get("replicas") or 0)
        available = "True" if ready >= wanted else "False"
        plan.status = {
            "observedGeneration": meta.get("generation", 1),
            "replicas": total,
            "updatedReplicas": updated,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "unavailableReplicas": max(wanted - ready, 0),
            "conditions": [
                {
                    "type": "Available",
                    "status": available,
                    "reason": "MinimumReplicasAvailable"
                    if available == "True"
                    else "MinimumReplicasUnavailable",
                    "message": "Deployment has minimum availability."
                    if available == "True"
                    else "Deployment does not have minimum availability.",
                }
            ],
        }
        plan.status = {
            k: v for k, v in plan.status.items() if v != 0 or k in ("replicas", "observedGeneration")
        }
        return plan
