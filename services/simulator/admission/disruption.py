"""PodDisruptionBudgets: the disruption controller's status and the eviction API's verdict.

`budget_status` is what kube-controller-manager's disruption controller writes into a PDB's
status (expected, healthy and desired pods, disruptions allowed, the DisruptionAllowed
condition); `eviction_verdict` is what the pods/eviction subresource decides before it deletes a
pod: allowed without consulting a budget, allowed by consuming one disruption, or refused with
429. `DisruptionController` keeps every PDB's status current from the store's pod and PDB
events. Follows https://kubernetes.io/docs/concepts/workloads/pods/disruptions/ and
https://kubernetes.io/docs/tasks/run-application/configure-pdb/.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from services.simulator.store import errors
from services.simulator.store.api_resources import PDBS, PODS
from services.simulator.store.history import WatchEvent
from services.simulator.store.selectors import from_label_selector_object
from services.simulator.store.store import Store, timestamp

TOO_MANY_REQUESTS = "Cannot evict pod as it would violate the pod's disruption budget."


def is_healthy(pod: dict[str, Any]) -> bool:
    """Running, Ready, and not being deleted: what the disruption controller counts."""
    if pod["metadata"].get("deletionTimestamp"):
        return False
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    )


def _scaled(value: Any, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        share = int(value[:-1]) * total / 100
        return math.ceil(share) if round_up else math.floor(share)
    return int(value)


def covers(pdb: dict[str, Any], pod: dict[str, Any]) -> bool:
    if pdb["metadata"].get("namespace") != pod["metadata"].get("namespace"):
        return False
    selector = (pdb.get("spec") or {}).get("selector")
    # policy/v1: a null selector selects nothing, an empty one every pod of the namespace.
    if selector is None:
        return False
    return from_label_selector_object(selector).matches_labels(pod["metadata"].get("labels"))


def budget_status(pdb: dict[str, Any], pods: list[dict[str, Any]], now: datetime) -> dict[str, Any]:
    """The status the disruption controller computes for `pdb` over the namespace's `pods`."""
    spec = pdb.get("spec") or {}
    covered = [p for p in pods if covers(pdb, p) and (p.get("status") or {}).get("phase") not in _ENDED]
    disrupted = dict((pdb.get("status") or {}).get("disruptedPods") or {})
    live = {p["metadata"]["name"] for p in covered if not p["metadata"].get("deletionTimestamp")}
    disrupted = {name: when for name, when in disrupted.items() if name in live}
    expected = len(covered)
    if spec.get("maxUnavailable") is not None:
        desired = max(0, expected - _scaled(spec["maxUnavailable"], expected, round_up=True))
    elif spec.get("minAvailable") is not None:
        desired = _scaled(spec["minAvailable"], expected, round_up=True)
    else:
        desired = expected
    healthy = sum(1 for p in covered if is_healthy(p) and p["metadata"]["name"] not in disrupted)
    allowed = max(0, healthy - desired)
    old_conditions = (pdb.get("status") or {}).get("conditions") or []
    condition = {
        "type": "DisruptionAllowed",
        "status": "True" if allowed > 0 else "False",
        "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
        "message": "",
        "observedGeneration": pdb["metadata"].get("generation", 1),
        "lastTransitionTime": timestamp(now),
    }
    previous = next((c for c in old_conditions if c.get("type") == "DisruptionAllowed"), None)
    if previous is not None and previous.get("status") == condition["status"]:
        condition["lastTransitionTime"] = previous.get("lastTransitionTime", condition["lastTransitionTime"])
    status: dict[str, Any] = {
        "observedGeneration": pdb["metadata"].get("generation", 1),
        "expectedPods": expected,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "disruptionsAllowed": allowed,
        "conditions": [condition],
    }
    if disrupted:
        status["disruptedPods"] = disrupted
    return status


_ENDED = ("Succeeded", "Failed")


def eviction_verdict(pod: dict[str, Any], budgets: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The budget whose disruption this eviction spends, or None when none needs consulting.

    Raises 429 when the budget forbids it and 500 when several budgets cover the pod, as the
    eviction subresource does. A pod that is pending, ended or already terminating is deleted
    without a budget; an unhealthy one only while the budget is met (IfHealthyBudget), and then
    without spending a disruption.
    """
    if (pod.get("status") or {}).get("phase") in ("Pending", *_ENDED) or pod["metadata"].get(
        "deletionTimestamp"
    ):
        return None
    if not budgets:
        return None
    if len(budgets) > 1:
        raise errors.internal(
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
        )
    pdb = budgets[0]
    status = pdb.get("status") or {}
    if status.get("observedGeneration", 0) < pdb["metadata"].get("generation", 1):
        raise _refused(pdb, "the disruption budget has not been processed yet; try again")
    healthy, desired = int(status.get("currentHealthy", 0)), int(status.get("desiredHealthy", 0))
    policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") or "IfHealthyBudget"
    if not is_healthy(pod):
        if policy == "AlwaysAllow" or healthy >= desired:
            return None
        raise _refused(
            pdb, f"The disruption budget {pdb['metadata']['name']} does not allow evicting pods currently"
        )
    if int(status.get("disruptionsAllowed", 0)) <= 0:
        raise _refused(
            pdb,
            f"The disruption budget {pdb['metadata']['name']} needs {desired} healthy pods "
            f"and has {healthy} currently",
        )
    return pdb


def spent(pdb: dict[str, Any], pod_name: str, now: datetime) -> dict[str, Any]:
    """`pdb` after one eviction: one disruption fewer, the pod recorded as disrupted."""
    status = dict(pdb.get("status") or {})
    status["disruptionsAllowed"] = int(status.get("disruptionsAllowed", 0)) - 1
    status["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod_name: timestamp(now)}
    return {**pdb, "status": status}


def _refused(pdb: dict[str, Any], why: str) -> errors.ApiError:
    return errors.ApiError(
        429,
        "TooManyRequests",
        TOO_MANY_REQUESTS,
        causes=[errors.FieldCause("DisruptionBudget", why, "")],
    )


class DisruptionController:
    """Recomputes the status of every PDB a pod or PDB event may have changed."""

    def __init__(self, store: Store, clock: Any) -> None:
        self._store, self._clock = store, clock
        store.subscribe(PODS, self._on_pod)
        store.subscribe(PDBS, self._on_budget)

    def budgets_for(self, pod: dict[str, Any]) -> list[dict[str, Any]]:
        namespace = pod["metadata"].get("namespace", "")
        return [b for b in self._store.iterate(PDBS, namespace) if covers(b, pod)]

    def _on_pod(self, event: WatchEvent) -> None:
        namespace = event.object["metadata"].get("namespace", "")
        if self._store.is_empty(PDBS):
            return
        for pdb in list(self._store.iterate(PDBS, namespace)):
            if covers(pdb, event.object) or (event.old is not None and covers(pdb, event.old)):
                self.refresh(pdb)

    def _on_budget(self, event: WatchEvent) -> None:
        if event.type != "DELETED":
            self.refresh(event.object)

    def refresh(self, pdb: dict[str, Any]) -> None:
        metadata = pdb["metadata"]
        current = self._store.find(PDBS, metadata.get("namespace", ""), metadata["name"])
        if current is None or current["metadata"]["uid"] != metadata["uid"]:
            return
        pods = list(self._store.iterate(PODS, metadata.get("namespace", "")))
        status = budget_status(current, pods, self._clock())
        if status != current.get("status"):
            self._store.update(PDBS, {**current, "status": status})
