"""Builders for scheduling-core tests: nodes, queues, gangs and snapshots in a line each.

Amounts are written as in manifests ("2", "4Gi"); every task request also counts one pod, as
`pod_requests` does, so pod-count limits behave as on a real node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from services.scheduler.core import (
    DEFAULT_CONF,
    CyclePlan,
    GangInfo,
    NodeInfo,
    QueueInfo,
    SchedulerConf,
    Snapshot,
    TaskInfo,
    parse_conf,
    plan_cycle,
)
from shared.domain.resources import Resources

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

FULL_CONF = parse_conf(
    """
actions: "enqueue, allocate, backfill, reclaim, preempt"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion},
            {name: nodeorder}, {name: binpack}]
"""
)


def res(cpu: str | None = None, memory: str | None = None, **extra: str) -> Resources:
    amounts: dict[str, str] = {}
    if cpu is not None:
        amounts["cpu"] = cpu
    if memory is not None:
        amounts["memory"] = memory
    amounts.update(extra)
    return Resources.parse(amounts)


def request(cpu: str | None = "1", memory: str | None = "1Gi", **extra: str) -> Resources:
    return res(cpu, memory, **extra) + Resources({"pods": 1000})


def node(name: str, cpu: str = "4", memory: str = "8Gi", pods: str = "110", **fields: Any) -> NodeInfo:
    extra = fields.pop("extra", {})
    allocatable = Resources.parse({"cpu": cpu, "memory": memory, "pods": pods, **extra})
    labels = {"kubernetes.io/hostname": name, **fields.pop("labels", {})}
    return NodeInfo(name=name, allocatable=allocatable, labels=labels, **fields)


def queue(name: str = "default", **fields: Any) -> QueueInfo:
    for key in ("capability", "guarantee", "deserved"):
        if isinstance(fields.get(key), Mapping) and not isinstance(fields[key], Resources):
            fields[key] = Resources.parse(fields[key])
    return QueueInfo(name=name, **fields)


def task(name: str, req: Resources | None = None, **fields: Any) -> TaskInfo:
    return TaskInfo(
        uid=fields.pop("uid", name),
        namespace=fields.pop("namespace", "default"),
        name=name,
        request=req if req is not None else request(),
        **fields,
    )


def gang(
    name: str,
    size: int = 1,
    req: Resources | None = None,
    *,
    min_member: int | None = None,
    queue: str = "default",
    phase: str = "Inqueue",
    tasks: Sequence[TaskInfo] | None = None,
    age: int = 0,
    **fields: Any,
) -> GangInfo:
    task_fields = fields.pop("task_fields", {})
    members = (
        tuple(tasks)
        if tasks is not None
        else tuple(task(f"{name}-worker-{i}", req, **task_fields) for i in range(size))
    )
    return GangInfo(
        uid=fields.pop("uid", name),
        namespace="default",
        name=name,
        queue=queue,
        min_member=size if min_member is None else min_member,
        created=fields.pop("created", NOW - timedelta(seconds=age)),
        phase=phase,
        tasks=members,
        **fields,
    )


def running(g: GangInfo, nodes: Sequence[str], status: str = "Running") -> GangInfo:
    """The same gang with its tasks already placed on `nodes` (one per task, cycled)."""
    placed = tuple(
        TaskInfo(**{**_fields(t), "node": nodes[i % len(nodes)], "status": status})
        for i, t in enumerate(g.tasks)
    )
    return GangInfo(**{**_fields(g), "tasks": placed, "phase": "Running"})


def _fields(obj: Any) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in obj.__slots__}


def snapshot(
    nodes: Sequence[NodeInfo],
    gangs: Sequence[GangInfo],
    queues: Sequence[QueueInfo] | None = None,
    **fields: Any,
) -> Snapshot:
    return Snapshot(
        nodes=tuple(nodes),
        queues=tuple(queues if queues is not None else [queue("default")]),
        gangs=tuple(gangs),
        now=fields.pop("now", NOW),
        **fields,
    )


def plan(
    nodes: Sequence[NodeInfo],
    gangs: Sequence[GangInfo],
    queues: Sequence[QueueInfo] | None = None,
    conf: SchedulerConf = DEFAULT_CONF,
    **fields: Any,
) -> CyclePlan:
    return plan_cycle(snapshot(nodes, gangs, queues, **fields), conf)


def placed(result: CyclePlan) -> dict[str, str]:
    """task uid -> node for every bind in the plan."""
    return {b.task_uid: b.node for g in result.binds for b in g.binds}


def bound_gangs(result: CyclePlan) -> list[str]:
    return sorted(g.gang_uid for g in result.binds)


def conf_with(*tier2: str, actions: str = "enqueue, allocate, backfill") -> SchedulerConf:
    plugins = ", ".join(f"{{name: {name}}}" for name in tier2)
    return parse_conf(
        f"""
actions: "{actions}"
tiers:
- plugins: [{{name: priority}}, {{name: gang}}, {{name: conformance}}]
- plugins: [{plugins}]
"""
    )
