"""The simulated kubelets: one object plays every node's kubelet and the node controller.

It listens to the store's pod and node events. A pod bound to a node is admitted against
what is left there (or refused OutOfcpu/OutOfmemory), becomes Running after the start delay
and ends when its annotations or a control request say. Deleting a node deletes its pods;
cordoning adds the unschedulable taint; NotReady flips the Ready condition. Every status it
writes goes through the store, so watchers see it. Timers come from an injected `Timers`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import orjson

from services.simulator.kubelets import pod_status
from services.simulator.kubelets.dra_drivers import RESOURCE_SLICES, node_devices, resource_slices
from services.simulator.kubelets.nodes import (
    NodeSpec,
    node_address,
    node_object,
    node_status,
    ready_condition,
)
from services.simulator.store import errors
from services.simulator.store.api_resources import NODES, PODS
from services.simulator.store.history import WatchEvent
from services.simulator.store.store import Store, timestamp
from shared.domain.resources import Resources, pod_requests

UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
NOT_READY_TAINTS = [
    {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
]


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Timers(Protocol):
    """What the kubelets need of an event loop (asyncio's loop satisfies it)."""

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle: ...


@dataclass
class _Admitted:
    node: str
    requests: Resources
    timer: TimerHandle | None = None


_REQUESTS_CACHE: dict[bytes, Resources] = {}


def requests_of(pod: dict[str, Any]) -> Resources:
    """The pod's effective request, remembered by the shape of its resources.

    Parsing quantities is the dearest step of binding a pod; the pods of one job share their
    shapes, so a small cache keyed by the resource stanzas saves nearly all of it.
    """
    spec = pod.get("spec") or {}
    containers, init = spec.get("containers") or [], spec.get("initContainers") or []
    key = orjson.dumps(
        [[c.get("resources") for c in containers], [c.get("resources") for c in init], spec.get("overhead")],
        option=orjson.OPT_SORT_KEYS,
    )
    found = _REQUESTS_CACHE.get(key)
    if found is None:
        if len(_REQUESTS_CACHE) > 4096:
            _REQUESTS_CACHE.clear()
        found = _REQUESTS_CACHE[key] = pod_requests(containers, init, spec.get("overhead"))
    return found


class Kubelets:
    def __init__(
        self,
        store: Store,
        timers: Timers,
        clock: Callable[[], datetime],
        start_delay: float = 0.05,
        stop_seconds: float = 0.0,
    ) -> None:
        self._store, self._timers, self._clock = store, timers, clock
        self._start_delay, self._stop_seconds = start_delay, stop_seconds
        self._stopping: dict[str, tuple[int, TimerHandle]] = {}  # pod uid -> (grace, timer)
        self._admitted: dict[str, _Admitted] = {}  # by pod uid
        self._used: dict[str, Resources] = {}  # by node name
        self._pods_on: dict[str, set[tuple[str, str]]] = {}  # node -> bound pods (any phase)
        self._node_index: dict[str, int] = {}
        self._allocatable: dict[str, tuple[str | None, Resources]] = {}
        self._pod_ips = 0
        store.subscribe(PODS, self._on_pod)
        store.subscribe(NODES, self._on_node)

    # -- what others ask -------------------------------------------------------------------

    def used(self, node: str) -> Resources:
        return self._used.get(node, Resources())

    def allocatable(self, node: dict[str, Any]) -> Resources:
        """The node's allocatable, parsed once per version of the node."""
        name, version = node["metadata"]["name"], node["metadata"].get("resourceVersion")
        cached = self._allocatable.get(name)
        if cached is None or cached[0] != version:
            parsed = Resources.parse((node.get("status") or {}).get("allocatable"))
            cached = self._allocatable[name] = (version, parsed)
        return cached[1]

    def pods_on(self, node: str) -> list[tuple[str, str]]:
        return sorted(self._pods_on.get(node, ()))

    # -- pods ------------------------------------------------------------------------------

    def _now(self) -> str:
        return timestamp(self._clock())

    def _on_pod(self, event: WatchEvent) -> None:
        pod = event.object
        metadata = pod["metadata"]
        uid, node = metadata["uid"], pod["spec"].get("nodeName")
        key = (metadata["namespace"], metadata["name"])
        if event.type == "DELETED":
            stopping = self._stopping.pop(uid, None)
            if stopping is not None:
                stopping[1].cancel()
        elif metadata.get("deletionTimestamp") and node:
            self._plan_stop(pod)
        if event.type == "DELETED" or pod_status.is_terminal(pod):
            self._release(uid)
            if event.type == "DELETED" and node:
                self._pods_on.get(node, set()).discard(key)
            return
        if not node:
            return
        self._pods_on.setdefault(node, set()).add(key)
        admitted = self._admitted.get(uid)
        if admitted is None and pod["status"].get("phase") == "Pending":
            self._admit(pod, node)
        elif (
            admitted is not None
            and pod["status"].get("phase") == "Running"
            and event.old
            and (
                (event.old["metadata"].get("annotations") or {}) != (metadata.get("annotations") or {})
                or event.old["status"].get("phase") != "Running"
            )
        ):
            self._plan_end(pod, admitted)

    def _admit(self, pod: dict[str, Any], node_name: str) -> None:
        node = self._store.find(NODES, "", node_name)
        if node is None:
            return  # bound to a node that does not exist: stays Pending, as in a real cluster
        requests = requests_of(pod)
        allocatable = self.allocatable(node)
        used = self.used(node_name)
        refusal = pod_status.admit(requests, used, allocatable)
        if refusal is not None:
            self._store.update(PODS, pod_status.rejected(pod, refusal, self._now()))
            return
        uid = pod["metadata"]["uid"]
        self._used[node_name] = used + requests
        admitted = self._admitted[uid] = _Admitted(node_name, requests)
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        admitted.timer = self._timers.call_later(self._start_delay, lambda: self._start(namespace, name, uid))

    def _plan_stop(self, pod: dict[str, Any]) -> None:
        """A pod marked for deletion: its containers get SIGTERM, exit after the pod's stop time
        (never later than its grace period, when SIGKILL would end them), then the kubelet removes
        the pod with a zero grace period, as https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination
        describes."""
        metadata = pod["metadata"]
        uid, grace = metadata["uid"], int(metadata.get("deletionGracePeriodSeconds") or 0)
        planned = self._stopping.get(uid)
        if planned is not None and planned[0] <= grace:
            return
        if planned is not None:
            planned[1].cancel()
        stop = pod_status.stop_seconds(metadata.get("annotations"), self._stop_seconds)
        if self._store.find(NODES, "", pod["spec"]["nodeName"]) is None:
            stop = 0.0  # no kubelet runs it: nothing to wait for
        namespace, name = metadata["namespace"], metadata["name"]
        timer = self._timers.call_later(min(float(grace), stop), lambda: self._stopped(namespace, name, uid))
        self._stopping[uid] = (grace, timer)

    def _stopped(self, namespace: str, name: str, uid: str) -> None:
        if self._current(namespace, name, uid) is not None:
            self._store.delete(PODS, namespace, name, uid=uid, grace_seconds=0)

    def _release(self, uid: str) -> None:
        admitted = self._admitted.pop(uid, None)
        if admitted is None:
            return
        if admitted.timer is not None:
            admitted.timer.cancel()
        self._used[admitted.node] = self._used.get(admitted.node, Resources()) - admitted.requests

    def _current(self, namespace: str, name: str, uid: str) -> dict[str, Any] | None:
        pod = self._store.find(PODS, namespace, name)
        return pod if pod is not None and pod["metadata"]["uid"] == uid else None

    def _start(self, namespace: str, name: str, uid: str) -> None:
        pod = self._current(namespace, name, uid)
        if pod is None or pod["status"].get("phase") != "Pending" or pod["metadata"].get("deletionTimestamp"):
            return
        node = pod["spec"]["nodeName"]
        self._pod_ips += 1
        pod_ip = f"10.244.{self._pod_ips // 250 % 250}.{self._pod_ips % 250 + 1}"
        host_ip = node_address(self._node_index.get(node, 0))
        self._store.update(PODS, pod_status.running(pod, host_ip, pod_ip, self._now()))

    def _plan_end(self, pod: dict[str, Any], admitted: _Admitted) -> None:
        plan = pod_status.planned_run(pod["metadata"].get("annotations"))
        if plan is None:
            return
        seconds, exit_code = plan
        if admitted.timer is not None:
            admitted.timer.cancel()
        started = datetime.strptime(pod["status"].get("startTime", self._now()), "%Y-%m-%dT%H:%M:%SZ")
        elapsed = (self._clock().replace(tzinfo=None) - started).total_seconds()
        metadata = pod["metadata"]
        namespace, name, uid = metadata["namespace"], metadata["name"], metadata["uid"]
        admitted.timer = self._timers.call_later(
            max(0.0, seconds - max(0.0, elapsed)),
            lambda: self._end(namespace, name, uid, exit_code),
        )

    def _end(self, namespace: str, name: str, uid: str, exit_code: int) -> None:
        pod = self._current(namespace, name, uid)
        if pod is not None and not pod_status.is_terminal(pod):
            self._store.update(PODS, pod_status.terminated(pod, exit_code, self._now()))

    def finish_pod(self, namespace: str, name: str, exit_code: int) -> dict[str, Any]:
        """End a bound pod now (Succeeded with 0, else Failed); 409 if it is not bound or over."""
        pod = self._store.get(PODS, namespace, name)
        if not pod["spec"].get("nodeName") or pod_status.is_terminal(pod):
            raise errors.conflict("pods", "", name, "the pod is not bound to a node or has already ended")
        return self._store.update(PODS, pod_status.terminated(pod, exit_code, self._now()))

    # -- nodes -----------------------------------------------------------------------------

    def add_node(self, spec: NodeSpec) -> dict[str, Any]:
        index = self._node_index.setdefault(spec.name, len(self._node_index))
        return self._store.create(NODES, node_object(spec, node_address(index), self._clock()))

    def _on_node(self, event: WatchEvent) -> None:
        node = event.object
        name = node["metadata"]["name"]
        if event.type == "DELETED":
            for namespace, pod_name in self.pods_on(name):
                if self._store.find(PODS, namespace, pod_name) is not None:
                    self._store.delete(PODS, namespace, pod_name)
            self._pods_on.pop(name, None)
            self._allocatable.pop(name, None)
            for published in list(self._store.iterate(RESOURCE_SLICES)):
                if published["spec"].get("nodeName") == name:
                    self._store.delete(RESOURCE_SLICES, "", published["metadata"]["name"])
            return
        index = self._node_index.setdefault(name, len(self._node_index))
        if event.type == "ADDED":
            self._publish_slices(node)
        if event.type == "ADDED" and not (node.get("status") or {}).get("conditions"):
            self._register(node, index)
            return
        taints = (node.get("spec") or {}).get("taints") or []
        cordoned = bool((node.get("spec") or {}).get("unschedulable"))
        has_taint = any(t.get("key") == UNSCHEDULABLE_TAINT["key"] for t in taints)
        if cordoned != has_taint:
            kept = [t for t in taints if t.get("key") != UNSCHEDULABLE_TAINT["key"]]
            new_taints = [*kept, dict(UNSCHEDULABLE_TAINT)] if cordoned else kept
            self._store.update(NODES, {**node, "spec": {**node["spec"], "taints": new_taints}})

    def _publish_slices(self, node: dict[str, Any]) -> None:
        """The node's DRA drivers publish a ResourceSlice each for the devices it was given."""
        for published in resource_slices(node["metadata"]["name"], node_devices(node)):
            if self._store.find(RESOURCE_SLICES, "", published["metadata"]["name"]) is None:
                self._store.create(RESOURCE_SLICES, published)

    def _register(self, node: dict[str, Any], index: int) -> None:
        """A Node created through the API without a status: report it as its kubelet would."""
        status = node.get("status") or {}
        capacity = status.get("capacity") or NodeSpec(node["metadata"]["name"]).capacity()
        full = node_status(node["metadata"]["name"], capacity, node_address(index), self._now())
        if status.get("allocatable"):
            full["allocatable"] = status["allocatable"]
        self._store.update(NODES, {**node, "spec": node.get("spec") or {}, "status": full})

    def set_node_ready(self, name: str, ready: bool) -> dict[str, Any]:
        node = self._store.get(NODES, "", name)
        now = self._now()
        conditions = pod_status.with_condition(
            node["status"].get("conditions") or [], ready_condition(ready, now)
        )
        taints = [t for t in node["spec"].get("taints") or [] if t.get("key") != NOT_READY_TAINTS[0]["key"]]
        if not ready:
            taints.extend(dict(t) for t in NOT_READY_TAINTS)
        updated = self._store.update(
            NODES,
            {
                **node,
                "spec": {**node["spec"], "taints": taints},
                "status": {**node["status"], "conditions": conditions},
            },
        )
        for namespace, pod_name in self.pods_on(name):
            pod = self._store.find(PODS, namespace, pod_name)
            if pod is not None and pod["status"].get("phase") == "Running":
                change = pod_status.ready_again if ready else pod_status.not_ready
                self._store.update(PODS, change(pod, now))
        return updated
