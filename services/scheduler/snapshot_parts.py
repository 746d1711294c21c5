"""Shell: the core's dataclasses made from the scheduler's rows, one object at a time.

Shared by the two ways the reader builds a snapshot: whole (`snapshot_reader.build_snapshot`,
a new leader's first cycle and the tests' reference) and incrementally, from what changed since
the last cycle (`snapshot_cache.SnapshotCache`). Both must agree exactly, so every object is made
here, from its rows and the cycle's pending decisions, and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Any, Protocol, TypeVar

from services.scheduler import pod_fields
from services.scheduler.core import snapshot as core
from services.scheduler.core.predicates import anti_affinity_terms
from services.scheduler.device_snapshot import DeviceSnapshot
from services.scheduler.projection import RELEASING_PHASE
from services.scheduler.storage_rows import StorageView, storage_view
from services.scheduler.topology_rows import gang_topology, hyper_node
from shared.domain.resources import Resources
from shared.volcano.keys import PODGROUP_PREFIX

DEFAULT_QUEUE = "default"
OTHER_POD_PHASES = ("Pending", "Running", RELEASING_PHASE)
T = TypeVar("T")
_TASK_STATUS = {
    "Pending": core.PENDING,
    "Running": core.RUNNING,
    "Succeeded": core.SUCCEEDED,
    "Failed": core.FAILED,
    RELEASING_PHASE: core.RELEASING,
}


class Memory(Protocol):
    """What the builders keep between cycles (snapshot_reader.ShellMemory)."""

    nominations: dict[str, str]
    below_min_since: dict[str, datetime]

    def forget_unseen(self, seen: int) -> None: ...

    def request(self, amounts: Mapping[str, Any]) -> Resources: ...

    def reuse(self, table: str, key: str, version: int, make: Callable[[], T]) -> T: ...


@dataclass
class Decided:
    """The pending decisions that count, as the builders lay them over the rows."""

    binds: dict[str, str]  # pod uid -> node
    evicting: set[str]  # pod uids
    enqueued: set[str]  # gang uids

    @classmethod
    def of(cls, decisions: Iterable[Any]) -> Decided:
        decided = cls({}, set(), set())
        for d in decisions:
            if d.kind == "bind":
                decided.binds[d.pod_uid] = d.node
            elif d.kind == "evict":
                decided.evicting.add(d.pod_uid)
            elif d.kind == "enqueue":
                decided.enqueued.add(d.gang_uid)
        return decided


class Claims:
    """Volume and device claims, resolved every cycle (a claim binds without its pod changing)."""

    def __init__(self, storage: Collection[Any], dra: DeviceSnapshot | None) -> None:
        self._storage, self.dra = storage, dra
        self._volumes: StorageView | None = None

    def resolve(self, task: core.TaskInfo, pod: Any, memory: Memory) -> core.TaskInfo:
        claims = (pod.placement or {}).get("claims")
        if claims and not task.node:
            self._volumes = self._volumes or storage_view(self._storage)
            task = replace(task, volume_needs=self._volumes.needs(pod.namespace, claims))
        if self.dra is not None and (pod.placement or {}).get("deviceClaims"):
            task = self.dra.task(task, pod, memory)
        return task


def has_claims(pod: Any) -> bool:
    placement = pod.placement or {}
    return bool(placement.get("claims") or placement.get("deviceClaims"))


def is_member(pod: Any) -> bool:
    return bool(pod.ours and pod.group_name)


def is_other(pod: Any) -> bool:
    return bool(pod.node_name and pod.phase in OTHER_POD_PHASES)


def member_task(pod: Any, memory: Memory, decided: Decided, claims: Claims) -> core.TaskInfo:
    """A gang's task: its row, its claims, and this cycle's pending decisions laid over it."""
    task = memory.reuse("pods", pod.uid, pod.resource_version, partial(_task, pod, memory))
    task = claims.resolve(task, pod, memory)
    return _overlay(
        task, decided.binds.get(pod.uid), pod.uid in decided.evicting, memory.nominations.get(pod.uid)
    )


def other_pod(pod: Any, memory: Memory) -> core.OtherPod:
    return memory.reuse("pods", pod.uid, pod.resource_version, partial(_other_pod, pod, memory))


def pod_gang(pod: Any) -> tuple[str, str]:
    """The (namespace, PodGroup name) a member pod belongs to."""
    return (pod.namespace, pod.group_name)


def group_key(group: Any) -> tuple[str, str]:
    return (group.namespace, group.name)


def gang_info(
    group: Any,
    tasks: Iterable[core.TaskInfo],
    priorities: Mapping[str, int],
    decided: Decided,
    below_min_since: Mapping[str, Any],
) -> core.GangInfo:
    network_topology, sub_groups = gang_topology(getattr(group, "topology", None))
    phase = "Inqueue" if group.phase == "Pending" and group.uid in decided.enqueued else group.phase
    return core.GangInfo(
        uid=group.uid,
        namespace=group.namespace,
        name=group.name,
        queue=group.queue,
        min_member=group.min_member,
        created=group.created_at,
        tasks=tuple(sorted(tasks, key=lambda t: (t.name, t.uid))),
        min_task_member=dict(group.min_task_member or {}),
        min_resources=Resources(group.min_resources) if group.min_resources else None,
        priority=priorities.get(group.priority_class or "", 0),
        phase=phase,
        below_min_since=below_min_since.get(group.uid),
        annotations=dict(group.annotations or {}),
        sla_waiting_time=pod_fields.sla_waiting_time(group.annotations or {}),
        network_topology=network_topology,
        sub_groups=sub_groups,
    )


def unjoined(gangs: Iterable[core.GangInfo], pods: Mapping[str, Any]) -> frozenset[str]:
    """Of `gangs`, those with no task that are the PodGroup made for one plain pod of ours
    (`podgroup-<its uid>`), which exists in the same namespace and names no group yet: the
    controller creates the PodGroup, then annotates the pod, so the pod joins next."""
    held = set()
    for gang in gangs:
        if gang.tasks or not gang.name.startswith(PODGROUP_PREFIX):
            continue
        pod = pods.get(gang.name.removeprefix(PODGROUP_PREFIX))
        if pod is not None and pod.ours and not pod.group_name and pod.namespace == gang.namespace:
            held.add(gang.uid)
    return frozenset(held)


def gang_order(gang: core.GangInfo) -> tuple[Any, str]:
    return (gang.created, gang.uid)


def queues_of(rows: Iterable[Any]) -> tuple[core.QueueInfo, ...]:
    infos = [_queue(q) for q in rows]
    if DEFAULT_QUEUE not in {q.name for q in infos}:
        infos.append(core.QueueInfo(name=DEFAULT_QUEUE))
    return tuple(sorted(infos, key=lambda q: q.name))


def nodes_of(rows: Iterable[Any], memory: Memory, dra: DeviceSnapshot | None) -> tuple[core.NodeInfo, ...]:
    infos = (memory.reuse("nodes", n.name, n.resource_version, partial(_node, n)) for n in rows)
    return tuple(sorted(infos if dra is None else map(dra.node, infos), key=lambda n: n.name))


def budgets_of(rows: Iterable[Any]) -> tuple[core.DisruptionBudget, ...]:
    return tuple(
        sorted(
            (
                core.DisruptionBudget(
                    namespace=b.namespace,
                    name=b.name,
                    selector=b.selector,
                    disruptions_allowed=b.disruptions_allowed,
                )
                for b in rows
            ),
            key=lambda b: (b.namespace, b.name),
        )
    )


def hyper_nodes_of(rows: Iterable[Any], memory: Memory) -> tuple[Any, ...]:
    return tuple(
        sorted(
            (memory.reuse("hyper_nodes", h.name, h.resource_version, partial(hyper_node, h)) for h in rows),
            key=lambda h: h.name,
        )
    )


def _queue(row: Any) -> core.QueueInfo:
    return core.QueueInfo(
        name=row.name,
        weight=row.weight,
        capability=Resources(row.capability) if row.capability else None,
        guarantee=Resources(row.guarantee or {}),
        deserved=Resources(row.deserved) if row.deserved else None,
        reclaimable=row.reclaimable,
        state=row.state,
        parent=row.parent,
        priority=row.priority,
        annotations=dict(row.annotations or {}),
    )


def _node(row: Any) -> core.NodeInfo:
    return core.NodeInfo(
        name=row.name,
        allocatable=Resources(row.allocatable),
        labels=dict(row.labels or {}),
        taints=tuple((row.taints or {}).get("items") or ()),
        unschedulable=row.unschedulable,
        ready=row.ready,
    )


def _task(pod: Any, memory: Memory) -> core.TaskInfo:
    """The task as its row says, before this cycle's pending decisions are laid over it."""
    placement = pod.placement or {}
    status = _TASK_STATUS.get(pod.phase, core.PENDING)
    node = pod.node_name
    if node and status == core.PENDING:
        status = core.BOUND  # bound, not yet started by its kubelet
    return core.TaskInfo(
        uid=pod.uid,
        namespace=pod.namespace,
        name=pod.name,
        request=memory.request(pod.request),
        task_role=pod.task_role or "",
        node=node,
        status=status,
        priority=pod.priority,
        node_selector=placement.get("nodeSelector") or {},
        affinity=placement.get("affinity"),
        tolerations=tuple(placement.get("tolerations") or ()),
        labels=placement.get("labels") or {},
        priority_class_name=pod.priority_class or "",
        **pod_fields.task_fields(placement),
    )


def _other_pod(pod: Any, memory: Memory) -> core.OtherPod:
    placement = pod.placement or {}
    return core.OtherPod(
        node=pod.node_name,
        request=memory.request(pod.request),
        namespace=pod.namespace,
        labels=placement.get("labels") or {},
        host_ports=pod_fields.stored_ports(placement),
        anti_affinity=tuple(anti_affinity_terms(placement.get("affinity"))),
    )


def _overlay(
    task: core.TaskInfo, decided_node: str | None, evicting: bool, nominated: str | None
) -> core.TaskInfo:
    node, status, pending = task.node, task.status, False
    if not node and decided_node:
        node, status = decided_node, core.BOUND
    if evicting and node:
        pending = status != core.RELEASING  # decided, not yet carried out: no budget counts it
        status = core.RELEASING
    if (node, status, nominated, pending) == (task.node, task.status, task.nominated_node, False):
        return task
    return replace(task, node=node, status=status, nominated_node=nominated, eviction_pending=pending)
