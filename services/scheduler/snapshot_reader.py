"""Shell: read one consistent snapshot from PostgreSQL into the core's dataclasses.

One REPEATABLE READ, READ ONLY transaction brings the in-memory mirror of the cluster's rows up
to date (only the rows ingest changed since the last cycle, mirror.py) and reads the pending
decisions, so the picture is consistent even while the ingester writes. Pending decisions
created after `expire_before` are overlaid: a bind decision makes its pod Bound on its node, an
eviction makes it Releasing, an enqueue makes its gang Inqueue. So what a previous cycle decided
counts as allocated until the cluster confirms it, or until the cycle loop expires it (when
ingest has caught up past its time-to-live, and the controller no longer carries it out), and
nothing is booked twice.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import Any, TypeVar, cast

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from services.scheduler import pod_fields
from services.scheduler.core import snapshot as core
from services.scheduler.core.predicates import anti_affinity_terms
from services.scheduler.mirror import ClusterMirror
from services.scheduler.projection import RELEASING_PHASE
from services.scheduler.storage_rows import StorageView, storage_view
from shared.domain.resources import Resources
from shared.storage import tables

DEFAULT_QUEUE = "default"
T = TypeVar("T")
_TASK_STATUS = {
    "Pending": core.PENDING,
    "Running": core.RUNNING,
    "Succeeded": core.SUCCEEDED,
    "Failed": core.FAILED,
    RELEASING_PHASE: core.RELEASING,
}


@dataclass
class ShellMemory:
    """What the shell carries between cycles for the core (lost on failover, rebuilt in a cycle)."""

    nominations: dict[str, str] = field(default_factory=dict)  # task uid -> node
    below_min_since: dict[str, datetime] = field(default_factory=dict)  # gang uid -> since
    # Core objects built from rows, by (table, key) with the row's resourceVersion: most rows are
    # unchanged from one cycle to the next, and rebuilding every node and pod was most of a
    # cycle's cost in a large cluster.
    built: dict[tuple[str, str], tuple[int, Any]] = field(default_factory=dict)
    # The rows themselves, brought up to date from what ingest changed since the last cycle.
    mirror: ClusterMirror = field(default_factory=ClusterMirror)

    # One Resources object per distinct request: the core converts each request object once per
    # cycle (by identity), and the pods of a job all ask for the same.
    requests: dict[tuple[tuple[str, Any], ...], Resources] = field(default_factory=dict)

    def request(self, amounts: Mapping[str, Any]) -> Resources:
        key = tuple(sorted(amounts.items()))
        held = self.requests.get(key)
        if held is None:
            if len(self.requests) > 10_000:
                self.requests.clear()
            held = self.requests[key] = Resources(amounts)
        return held

    def holds(self, table: str, key: str, version: int) -> bool:
        held = self.built.get((table, key))
        return held is not None and held[0] == version

    def reuse(self, table: str, key: str, version: int, make: Callable[[], T]) -> T:
        held = self.built.get((table, key))
        if held is not None and held[0] == version:
            return cast(T, held[1])
        made = make()
        self.built[(table, key)] = (version, made)
        return made

    def forget_unseen(self, seen: int) -> None:
        """Drop what no longer exists, once stale entries outnumber the live ones."""
        if len(self.built) > 2 * seen + 1000:
            self.built.clear()


@dataclass(frozen=True)
class ReadResult:
    snapshot: core.Snapshot
    conf_text: str | None
    verdicts: Mapping[str, tuple[str, str, str]]  # gang uid -> recorded (reason, message, queue)


async def read_snapshot(
    session: AsyncSession, *, now: datetime, expire_before: datetime | None, memory: ShellMemory
) -> ReadResult:
    """`expire_before`: pending decisions created before it no longer count (None: all count).

    The cluster's rows come from the memory's mirror, which reads only what changed since the
    last cycle (mirror.py); pending decisions are read whole each cycle, as they are few."""
    await session.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"))
    mirror = memory.mirror
    await mirror.catch_up(session)
    decision = tables.Decision
    counted = select(decision.kind, decision.gang_uid, decision.pod_uid, decision.node).where(
        decision.state == "pending"
    )
    if expire_before is not None:
        counted = counted.where(decision.created_at > expire_before)
    decision_rows = (await session.execute(counted)).all()
    snapshot = build_snapshot(
        now=now,
        queues=mirror.queues.values(),
        nodes=mirror.nodes.values(),
        priority_classes=mirror.priority_classes.values(),
        groups=mirror.groups.values(),
        pods=mirror.pods.values(),
        decisions=decision_rows,
        memory=memory,
        budgets=mirror.budgets.values(),
        storage=mirror.storage.values(),
    )
    return ReadResult(snapshot, mirror.conf_text, mirror.verdicts)


def build_snapshot(
    *,
    now: datetime,
    # Rows of the tables of the same names: Core rows or ORM instances (tests), read by attribute.
    queues: Collection[Any],
    nodes: Collection[Any],
    priority_classes: Collection[Any],
    groups: Collection[Any],
    pods: Collection[Any],
    decisions: Collection[Any],
    memory: ShellMemory,
    budgets: Collection[Any] = (),
    storage: Collection[Any] = (),
) -> core.Snapshot:
    """The core's snapshot; objects built from unchanged rows are reused from `memory`."""
    binds = {d.pod_uid: d.node for d in decisions if d.kind == "bind"}
    evicting = {d.pod_uid for d in decisions if d.kind == "evict"}
    enqueued = {d.gang_uid for d in decisions if d.kind == "enqueue"}
    priorities = {p.name: p.value for p in priority_classes}

    queue_infos = [_queue(q) for q in queues]
    if DEFAULT_QUEUE not in {q.name for q in queue_infos}:
        queue_infos.append(core.QueueInfo(name=DEFAULT_QUEUE))

    members: dict[tuple[str, str], list[core.TaskInfo]] = defaultdict(list)
    others: list[core.OtherPod] = []
    volumes: StorageView | None = None
    for pod in pods:
        if pod.ours and pod.group_name:
            task = memory.reuse("pods", pod.uid, pod.resource_version, partial(_task, pod, memory))
            claims = (pod.placement or {}).get("claims")
            if claims and not task.node:
                # Resolved every cycle, not cached with the pod: a claim binds without it changing.
                volumes = volumes or storage_view(storage)
                task = replace(task, volume_needs=volumes.needs(pod.namespace, claims))
            members[(pod.namespace, pod.group_name)].append(
                _overlay(task, binds.get(pod.uid), pod.uid in evicting, memory.nominations.get(pod.uid))
            )
        elif pod.node_name and pod.phase in ("Pending", "Running", RELEASING_PHASE):
            other = memory.reuse("pods", pod.uid, pod.resource_version, partial(_other_pod, pod, memory))
            others.append(other)
    gangs = []
    for group in groups:
        tasks = tuple(sorted(members.get((group.namespace, group.name), ()), key=lambda t: t.name))
        phase = "Inqueue" if group.phase == "Pending" and group.uid in enqueued else group.phase
        gangs.append(
            core.GangInfo(
                uid=group.uid,
                namespace=group.namespace,
                name=group.name,
                queue=group.queue,
                min_member=group.min_member,
                created=group.created_at,
                tasks=tasks,
                min_task_member=dict(group.min_task_member or {}),
                min_resources=Resources(group.min_resources) if group.min_resources else None,
                priority=priorities.get(group.priority_class or "", 0),
                phase=phase,
                below_min_since=memory.below_min_since.get(group.uid),
                annotations=dict(group.annotations or {}),
                sla_waiting_time=pod_fields.sla_waiting_time(group.annotations or {}),
            )
        )
    gangs.sort(key=lambda g: (g.created, g.uid))
    memory.forget_unseen(len(pods) + len(nodes))
    return core.Snapshot(
        nodes=tuple(
            sorted(
                (memory.reuse("nodes", n.name, n.resource_version, partial(_node, n)) for n in nodes),
                key=lambda n: n.name,
            )
        ),
        queues=tuple(sorted(queue_infos, key=lambda q: q.name)),
        gangs=tuple(gangs),
        now=now,
        priority_classes=priorities,
        other_pods=tuple(others),
        budgets=tuple(
            sorted(
                (
                    core.DisruptionBudget(
                        namespace=b.namespace,
                        name=b.name,
                        selector=b.selector,
                        disruptions_allowed=b.disruptions_allowed,
                    )
                    for b in budgets
                ),
                key=lambda b: (b.namespace, b.name),
            )
        ),
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


def _task(pod: Any, memory: ShellMemory) -> core.TaskInfo:
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


def _other_pod(pod: Any, memory: ShellMemory) -> core.OtherPod:
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
