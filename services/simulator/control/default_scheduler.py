"""A stand-in for kube-scheduler, so that pods which are not Phalanx's still run.

Pods whose schedulerName is `default-scheduler` are bound, in creation order, to the first
Ready, schedulable node (by name) whose taints they tolerate, whose labels match their
nodeSelector and where their requests fit beside what the kubelets have admitted. A pod that
fits nowhere gets PodScheduled=False/Unschedulable and is retried when pods end or nodes change.
It binds through the store, exactly as pods/binding does; it can be switched off in settings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from services.simulator.kubelets import pod_status
from services.simulator.kubelets.kubelet import Kubelets, Timers, requests_of
from services.simulator.store.api_resources import NODES, PODS
from services.simulator.store.history import WatchEvent
from services.simulator.store.store import Store, timestamp

DEFAULT_SCHEDULER = "default-scheduler"


def tolerates(tolerations: list[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
            continue
        if toleration.get("operator") == "Exists":
            if not toleration.get("key") or toleration["key"] == taint.get("key"):
                return True
        elif toleration.get("key") == taint.get("key") and (
            toleration.get("value", "") == taint.get("value", "")
        ):
            return True
    return False


def node_accepts(node: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Everything but resources: readiness, cordon, taints, nodeSelector."""
    spec, status = node.get("spec") or {}, node.get("status") or {}
    if spec.get("unschedulable"):
        return False
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    if ready is None or ready.get("status") != "True":
        return False
    tolerations = pod["spec"].get("tolerations") or []
    for taint in spec.get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            return False
    labels = node["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in (pod["spec"].get("nodeSelector") or {}).items())


class DefaultScheduler:
    def __init__(
        self, store: Store, kubelets: Kubelets, timers: Timers, clock: Callable[[], datetime]
    ) -> None:
        self._store, self._kubelets, self._timers, self._clock = store, kubelets, timers, clock
        self._waiting: dict[tuple[str, str], str] = {}  # (namespace, name) -> uid
        self._pass_planned = False
        store.subscribe(PODS, self._on_pod)
        store.subscribe(NODES, lambda _event: self._plan_pass())

    def _on_pod(self, event: WatchEvent) -> None:
        pod = event.object
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        if event.type == "DELETED" or pod_status.is_terminal(pod):
            self._waiting.pop(key, None)
            self._plan_pass()
            return
        if (
            event.type == "ADDED"
            and pod["spec"].get("schedulerName") == DEFAULT_SCHEDULER
            and not pod["spec"].get("nodeName")
        ):
            self._waiting[key] = pod["metadata"]["uid"]
            self._plan_pass()

    def _plan_pass(self) -> None:
        # Run after the current write's events are delivered, so the kubelets' accounting
        # already includes every pod bound so far.
        if self._waiting and not self._pass_planned:
            self._pass_planned = True
            self._timers.call_later(0, self._schedule_waiting)

    def _schedule_waiting(self) -> None:
        self._pass_planned = False
        nodes = sorted(self._store.iterate(NODES), key=lambda n: n["metadata"]["name"])
        for key, uid in list(self._waiting.items()):
            pod = self._store.find(PODS, *key)
            if pod is None or pod["metadata"]["uid"] != uid or pod["spec"].get("nodeName"):
                self._waiting.pop(key, None)
                continue
            self._place(pod, nodes)

    def _place(self, pod: dict[str, Any], nodes: list[dict[str, Any]]) -> None:
        requests = requests_of(pod)
        now = timestamp(self._clock())
        for node in nodes:
            name = node["metadata"]["name"]
            allocatable = self._kubelets.allocatable(node)
            if node_accepts(node, pod) and requests.fits_in(allocatable - self._kubelets.used(name)):
                self._waiting.pop((pod["metadata"]["namespace"], pod["metadata"]["name"]), None)
                self._store.update(PODS, pod_status.bound(pod, name, now))
                return
        message = f"0/{len(nodes)} nodes are available: no node fits the pod."
        scheduled = next(
            (c for c in pod["status"].get("conditions") or [] if c.get("type") == "PodScheduled"),
            None,
        )
        if scheduled is None or scheduled.get("message") != message:
            self._store.update(PODS, pod_status.unschedulable(pod, message, now))
