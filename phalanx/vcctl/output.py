"""Pure: vcctl's tables (same columns, widths and words), and kubectl's -o json|yaml|wide.

The default tables are vcctl's byte for byte, so a script that cuts columns out of vcctl's output
reads ours the same way; `wide` appends columns after vcctl's; json and yaml print the objects
themselves (a kubectl-style List for lists).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

import yaml

from shared.volcano.keys import JOB_TYPE

Json = dict[str, Any]
FORMATS = ("json", "yaml", "wide")
NO_RESOURCES = "No resources found"

JOB_COLUMNS = (
    "Name",
    "Creation",
    "Phase",
    "JobType",
    "Replicas",
    "Min",
    "Pending",
    "Running",
    "Succeeded",
    "Failed",
    "Unknown",
    "RetryCount",
)
# vcctl's widths after the name column (which is as wide as the longest name plus 3).
_JOB_WIDTHS = (15, 12, 12, 12, 6, 10, 10, 12, 10, 12, 10)
QUEUE_COLUMNS = ("Name", "Weight", "State", "Inqueue", "Pending", "Running", "Unknown", "Completed")
QUEUE_GET_COLUMNS = (
    "Name",
    "Weight",
    "State",
    "Parent",
    "Inqueue",
    "Pending",
    "Running",
    "Unknown",
    "Completed",
)


def document(objects: Json | list[Json], fmt: str) -> str:
    """`objects` as -o json or -o yaml; a list becomes a kubectl List."""
    body: Json = (
        objects if isinstance(objects, dict) else {"apiVersion": "v1", "kind": "List", "items": objects}
    )
    if fmt == "json":
        return json.dumps(body, indent=4)
    return yaml.safe_dump(body, sort_keys=False).rstrip("\n")


def _row(cells: Iterable[object], widths: Iterable[int]) -> str:
    return "".join(f"{cell!s:<{width}}" for cell, width in zip(cells, widths, strict=True))


def job_type(job: Json) -> str:
    return str((job["metadata"].get("labels") or {}).get(JOB_TYPE) or "Batch")


def job_cells(job: Json) -> list[object]:
    status = job.get("status") or {}
    created = str(job["metadata"].get("creationTimestamp", ""))[:10]
    replicas = sum(int(task.get("replicas", 0)) for task in job.get("spec", {}).get("tasks") or [])
    counts = [
        int(status.get(key, 0) or 0) for key in ("pending", "running", "succeeded", "failed", "unknown")
    ]
    return [
        job["metadata"]["name"],
        created,
        (status.get("state") or {}).get("phase", ""),
        job_type(job),
        replicas,
        int(status.get("minAvailable", 0) or 0),
        *counts,
        int(status.get("retryCount", 0) or 0),
    ]


def job_table(jobs: list[Json], *, all_namespaces: bool, wide: bool = False) -> str:
    name_width = max([len("Name"), *(len(j["metadata"]["name"]) for j in jobs)]) + 3
    ns_width = max([len("Namespace"), *(len(j["metadata"].get("namespace", "")) for j in jobs)]) + 3
    widths = [name_width, *_JOB_WIDTHS]
    header: list[object] = list(JOB_COLUMNS)
    if all_namespaces:
        widths.insert(0, ns_width)
        header.insert(0, "Namespace")
    extra = ("Queue", "Scheduler") if wide else ()
    lines = [_row(header, widths) + "".join(f"  {c:<12}" for c in extra)]
    for job in jobs:
        cells = job_cells(job)
        if all_namespaces:
            cells.insert(0, job["metadata"].get("namespace", ""))
        line = _row(cells, widths)
        if wide:
            spec = job.get("spec", {})
            line += f"  {spec.get('queue', 'default'):<12}  {spec.get('schedulerName', ''):<12}"
        lines.append(line)
    return "\n".join(line.rstrip() if wide else line for line in lines)


def podgroup_counts(podgroups: list[Json]) -> dict[str, Counter[str]]:
    """PodGroups per queue by phase: the numbers vcctl's queue list and get show."""
    counts: dict[str, Counter[str]] = {}
    for group in podgroups:
        queue = group.get("spec", {}).get("queue") or "default"
        phase = (group.get("status") or {}).get("phase") or "Pending"
        counts.setdefault(queue, Counter())[phase] += 1
    return counts


def _queue_cells(queue: Json, counts: Counter[str]) -> list[object]:
    return [
        queue["metadata"]["name"],
        queue.get("spec", {}).get("weight", 1),
        (queue.get("status") or {}).get("state", ""),
        *(counts[phase] for phase in ("Inqueue", "Pending", "Running", "Unknown", "Completed")),
    ]


def _capability(queue: Json) -> str:
    capability = queue.get("spec", {}).get("capability") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(capability.items())) or "<none>"


def queue_table(queues: list[Json], counts: dict[str, Counter[str]], *, wide: bool = False) -> str:
    widths = [25] + [8] * 7
    header = _row(QUEUE_COLUMNS, widths) + ("  Capability" if wide else "")
    lines = [header]
    for queue in queues:
        line = _row(_queue_cells(queue, counts.get(queue["metadata"]["name"], Counter())), widths)
        lines.append(line + (f"  {_capability(queue)}" if wide else ""))
    return "\n".join(lines)


def queue_get_table(queue: Json, counts: Counter[str]) -> str:
    """vcctl queue get: the list's columns with the parent queue after the state."""
    widths = [25] + [8] * 8
    cells = _queue_cells(queue, counts)
    cells.insert(3, queue.get("spec", {}).get("parent", ""))
    return "\n".join((_row(QUEUE_GET_COLUMNS, widths), _row(cells, widths)))


def parse_resources(spec: str, flag: str) -> dict[str, str]:
    """vcctl's `<name>=<quantity>,...` (e.g. cpu=1000m,memory=100Mi) as a resource list."""
    result: dict[str, str] = {}
    if not spec:
        return result
    for statement in spec.split(","):
        parts = statement.split("=")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise ValueError(f"{flag}: invalid argument syntax {statement}, expected <resource>=<value>")
        result[parts[0].strip()] = parts[1].strip()
    return result
