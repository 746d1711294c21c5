"""A workload trace: the cluster, the queues and the jobs, as `phalanx replay` reads them.

A trace is one JSON object:

    {"name": "...", "description": "...",
     "nodes": [{"count": 16, "resources": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"}}],
     "queues": [{"name": "research", "weight": 2}],
     "jobs": [{"name": "j0001", "queue": "research", "arrival": 12.5, "tasks": 2,
               "request": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8"},
               "runtime": 3600, "estimate": 5400, "class": "llm-finetune"}]}

Times are seconds from the start of the trace; `request` is per task (one pod); `estimate` is what
the user declared (null when nothing was), `class` the job class estimates are learned under.
A malformed trace is refused with the job and the field named.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.domain.resources import Resources


class TraceError(ValueError):
    """A trace that cannot be replayed; the message names the entry and the field."""


@dataclass(frozen=True, slots=True)
class NodeGroup:
    count: int
    resources: Resources


@dataclass(frozen=True, slots=True)
class TraceJob:
    name: str
    queue: str
    arrival: float
    tasks: int
    request: Resources
    runtime: float
    estimate: float | None
    job_class: str


@dataclass(frozen=True, slots=True)
class Trace:
    name: str
    description: str
    nodes: tuple[NodeGroup, ...]
    queues: tuple[tuple[str, int], ...]  # (name, weight)
    jobs: tuple[TraceJob, ...]


def load(path: Path) -> Trace:
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise TraceError(f"{path}: not a readable JSON trace: {err}") from err
    return parse(raw)


def parse(raw: Any) -> Trace:
    if not isinstance(raw, dict):
        raise TraceError("a trace is a JSON object with nodes, queues and jobs")
    nodes = tuple(
        NodeGroup(_positive_int(group, "count", f"nodes[{i}]"), _resources(group, f"nodes[{i}]"))
        for i, group in enumerate(_list(raw, "nodes"))
    )
    queues = tuple((str(q.get("name")), int(q.get("weight", 1))) for q in raw.get("queues") or []) or (
        ("default", 1),
    )
    known = {name for name, _ in queues}
    jobs = []
    for i, job in enumerate(_list(raw, "jobs")):
        where = f"jobs[{i}] ({job.get('name', '?')})" if isinstance(job, dict) else f"jobs[{i}]"
        if not isinstance(job, dict):
            raise TraceError(f"{where}: must be an object")
        queue = str(job.get("queue", "default"))
        if queue not in known:
            raise TraceError(f"{where}.queue: {queue!r} is not one of the trace's queues")
        runtime = _number(job, "runtime", where)
        arrival = _number(job, "arrival", where, allow_zero=True)
        estimate = job.get("estimate")
        jobs.append(
            TraceJob(
                name=str(job.get("name") or f"job-{i}"),
                queue=queue,
                arrival=arrival,
                tasks=_positive_int(job, "tasks", where),
                request=_resources(job, where, key="request"),
                runtime=runtime,
                estimate=None if estimate is None else _number(job, "estimate", where),
                job_class=str(job.get("class") or ""),
            )
        )
    jobs.sort(key=lambda j: (j.arrival, j.name))
    return Trace(str(raw.get("name", "trace")), str(raw.get("description", "")), nodes, queues, tuple(jobs))


def dump(trace: Trace) -> dict[str, Any]:
    return {
        "name": trace.name,
        "description": trace.description,
        "nodes": [{"count": g.count, "resources": g.resources.to_quantities()} for g in trace.nodes],
        "queues": [{"name": name, "weight": weight} for name, weight in trace.queues],
        "jobs": [
            {
                "name": j.name,
                "queue": j.queue,
                "arrival": round(j.arrival, 1),
                "tasks": j.tasks,
                "request": j.request.to_quantities(),
                "runtime": round(j.runtime, 1),
                "estimate": None if j.estimate is None else round(j.estimate, 1),
                "class": j.job_class,
            }
            for j in trace.jobs
        ],
    }


def _list(raw: dict[str, Any], key: str) -> list[Any]:
    value = raw.get(key)
    if not isinstance(value, list) or not value:
        raise TraceError(f"{key}: must be a non-empty list")
    return value


def _positive_int(obj: dict[str, Any], key: str, where: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TraceError(f"{where}.{key}: must be a whole number >= 1, not {value!r}")
    return value


def _number(obj: dict[str, Any], key: str, where: str, *, allow_zero: bool = False) -> float:
    value = obj.get(key)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or value < 0
        or (value == 0 and not allow_zero)
    ):
        rule = ">= 0" if allow_zero else "> 0"
        raise TraceError(f"{where}.{key}: must be a number of seconds {rule}, not {value!r}")
    return float(value)


def _resources(obj: dict[str, Any], where: str, key: str = "resources") -> Resources:
    value = obj.get(key)
    if not isinstance(value, dict) or not value:
        raise TraceError(f"{where}.{key}: must be a map of resource quantities")
    try:
        return Resources.parse({str(k): str(v) for k, v in value.items()})
    except ValueError as err:
        raise TraceError(f"{where}.{key}: {err}") from err
