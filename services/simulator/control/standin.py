"""Shell: the simulator's stand-in controllers and operators around their pure planners.

Kubernetes' Deployment, ReplicaSet and StatefulSet controllers, KubeRay and Kubeflow's training
operator are not part of the simulated apiserver, but a user applying their manifests expects
them to run. Each stand-in is a pure planner (`Planner.plan`: the owner object and a read-only
`View` of what it owns in, a `Plan` of writes out); this module is the shell around them. It
listens to the store for the owners and for everything that names an owner as its controller,
reconciles each changed owner once per pass (work_queue.py: a write that fails is retried after
`retry_delay` seconds, as a real controller's work queue requeues with backoff), and carries out
the plan through `Operations`, so every write takes the path a real controller's request takes
(defaults, Priority admission, the webhooks, validation).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from services.simulator.admission.operations import Operations
from services.simulator.control.work_queue import WorkQueue
from services.simulator.store.api_resources import BY_KIND, Kind
from services.simulator.store.errors import ApiError
from services.simulator.store.history import WatchEvent
from services.simulator.store.store import Store, timestamp
from shared.domain.resources import Resources

Obj = dict[str, Any]
OwnerKey = tuple[Kind, str, str]  # (owner kind, namespace, name)


@dataclass
class Plan:
    """What one reconcile of one owner writes, in order: creates, updates, deletes, status."""

    creates: list[tuple[Kind, Obj]] = field(default_factory=list)
    updates: list[tuple[Kind, Obj]] = field(default_factory=list)  # whole objects, as read + changed
    deletes: list[tuple[Kind, str, str]] = field(default_factory=list)  # (kind, namespace, name)
    status: Obj | None = None  # the owner's new status; written only when it differs


class View(Protocol):
    """What a planner may read: the objects its owner controls, and any object by name."""

    def owned(self, kind: Kind, owner: Obj) -> list[Obj]: ...

    def find(self, kind: Kind, namespace: str, name: str) -> Obj | None: ...

    def now(self) -> str: ...


class Planner(Protocol):
    @property
    def owner_kinds(self) -> tuple[Kind, ...]: ...  # what it reconciles

    @property
    def child_kinds(self) -> tuple[Kind, ...]: ...  # what it creates, naming the owner as controller

    def plan(self, owner: Obj, view: View) -> Plan: ...


def controller_ref(owner: Obj) -> Obj:
    """metav1.NewControllerRef: what every object a controller creates names as its owner."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_uid(obj: Obj) -> str | None:
    for reference in obj["metadata"].get("ownerReferences") or ():
        if reference.get("controller"):
            return str(reference.get("uid"))
    return None


class StoreView:
    """A `View` over the store: children are found by their controller reference's uid."""

    def __init__(self, store: Store, clock: Callable[[], datetime]) -> None:
        self._store, self._clock = store, clock

    def owned(self, kind: Kind, owner: Obj) -> list[Obj]:
        uid, namespace = owner["metadata"]["uid"], owner["metadata"].get("namespace")
        return [o for o in self._store.iterate(kind, namespace) if controller_uid(o) == uid]

    def find(self, kind: Kind, namespace: str, name: str) -> Obj | None:
        return self._store.find(kind, namespace, name)

    def now(self) -> str:
        return timestamp(self._clock())


def _describe(key: OwnerKey) -> str:
    return f"stand-in {key[0].kind} {key[1]}/{key[2]}"


class StandIns:
    """Runs every planner: marks owners dirty on events, reconciles them on the running loop."""

    def __init__(
        self,
        store: Store,
        operations: Operations,
        planners: list[Planner],
        clock: Callable[[], datetime],
        *,
        retry_delay: float = 1.0,
        loop: Callable[[], asyncio.AbstractEventLoop] = asyncio.get_running_loop,
    ) -> None:
        self._store, self._operations = store, operations
        self._view = StoreView(store, clock)
        self._planners: dict[Kind, Planner] = {}
        self._queue: WorkQueue[OwnerKey] = WorkQueue(
            self._reconcile, _describe, retry_delay=retry_delay, loop=loop
        )
        watched: set[Kind] = set()
        for planner in planners:
            for kind in planner.owner_kinds:
                self._planners[kind] = planner
                store.subscribe(kind, self._on_owner)
            watched.update(planner.child_kinds)
        for kind in watched:
            store.subscribe(kind, self._on_child)

    # -- what changed ------------------------------------------------------------------------

    def _on_owner(self, event: WatchEvent) -> None:
        if event.type != "DELETED":
            meta = event.object["metadata"]
            self.mark((event.kind, meta.get("namespace", ""), meta["name"]))

    def _on_child(self, event: WatchEvent) -> None:
        meta = event.object["metadata"]
        for reference in meta.get("ownerReferences") or ():
            if not reference.get("controller"):
                continue
            kind = BY_KIND.get((str(reference.get("apiVersion")), str(reference.get("kind"))))
            if kind in self._planners:
                self.mark((kind, meta.get("namespace", ""), str(reference.get("name"))))

    def mark(self, key: OwnerKey) -> None:
        self._queue.mark(key)

    async def settle(self) -> None:
        """Reconcile until nothing is dirty (tests; the server drains on its own)."""
        await self._queue.settle()

    # -- reconciling -------------------------------------------------------------------------

    async def _reconcile(self, key: OwnerKey) -> None:
        kind, namespace, name = key
        owner = self._store.find(kind, namespace, name)
        if owner is None or owner["metadata"].get("deletionTimestamp"):
            return
        plan = self._planners[kind].plan(owner, self._view)
        ops = self._operations
        for child_kind, body in plan.creates:
            try:
                await ops.create(child_kind, namespace, body)
            except ApiError as error:
                if error.code != 409:  # AlreadyExists: an earlier pass made it
                    raise
        for child_kind, body in plan.updates:
            meta = body["metadata"]
            await ops.update(child_kind, meta.get("namespace", ""), meta["name"], body)
        for child_kind, child_namespace, child_name in plan.deletes:
            if self._store.find(child_kind, child_namespace, child_name) is not None:
                await ops.delete(child_kind, child_namespace, child_name)
        if plan.status is not None:
            current = self._store.find(kind, namespace, name)
            if current is not None and (current.get("status") or {}) != plan.status:
                await ops.update(kind, namespace, name, {**current, "status": plan.status}, status_only=True)


def template_requests(pod_spec: Obj | None) -> Resources:
    """What the operators sum for a PodGroup's minResources: each container's requests, or its
    limits where it states no requests (as the apiserver would default them)."""
    total = Resources()
    for container in (pod_spec or {}).get("containers") or ():
        resources = container.get("resources") or {}
        requests = resources.get("requests")
        total = total + Resources.parse(requests if requests is not None else resources.get("limits"))
    return total
