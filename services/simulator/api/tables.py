"""`kubectl get` output: Table answers with the columns kubectl prints for each kind.

kubectl asks for `application/json;as=Table;g=meta.k8s.io;v=v1` and prints whatever columns
the server sends; without a Table it prints only names and ages. The columns here follow the
apiserver's printers for Pods, Nodes and Namespaces and the printer columns of Volcano's CRDs.
Pure: objects and the current time in, a Table dict out.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from services.simulator.store.api_resources import Kind

Cell = Callable[[dict[str, Any], datetime], Any]
TABLE_MEDIA_TYPE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def age(obj: dict[str, Any], now: datetime) -> str:
    created = obj["metadata"].get("creationTimestamp")
    if not created:
        return "<unknown>"
    then = datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=now.tzinfo)
    seconds = max(0, int((now - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * 2:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _field(*path: str) -> Cell:
    def read(obj: dict[str, Any], _now: datetime) -> Any:
        current: Any = obj
        for part in path:
            current = current.get(part) if isinstance(current, dict) else None
        return "" if current is None else current

    return read


def _pod_ready(obj: dict[str, Any], _now: datetime) -> str:
    statuses = (obj.get("status") or {}).get("containerStatuses") or []
    total = len((obj.get("spec") or {}).get("containers") or [])
    return f"{sum(1 for s in statuses if s.get('ready'))}/{total}"


def _pod_status(obj: dict[str, Any], _now: datetime) -> str:
    status = obj.get("status") or {}
    if obj["metadata"].get("deletionTimestamp"):
        return "Terminating"
    for container in status.get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated")
        if terminated:
            return str(terminated.get("reason", "Completed"))
    return str(status.get("reason") or status.get("phase") or "Pending")


def _node_status(obj: dict[str, Any], _now: datetime) -> str:
    conditions = (obj.get("status") or {}).get("conditions") or []
    ready: dict[str, Any] = next((c for c in conditions if c.get("type") == "Ready"), {})
    text = "Ready" if ready.get("status") == "True" else "NotReady"
    if (obj.get("spec") or {}).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


_NAME: tuple[str, str, int, Cell] = ("Name", "string", 0, _field("metadata", "name"))
_AGE: tuple[str, str, int, Cell] = ("Age", "string", 0, age)
_COLUMNS: dict[str, list[tuple[str, str, int, Cell]]] = {
    "Pod": [
        _NAME,
        ("Ready", "string", 0, _pod_ready),
        ("Status", "string", 0, _pod_status),
        ("Restarts", "integer", 0, lambda o, n: 0),
        _AGE,
        ("IP", "string", 1, _field("status", "podIP")),
        ("Node", "string", 1, _field("spec", "nodeName")),
    ],
    "Node": [
        _NAME,
        ("Status", "string", 0, _node_status),
        ("Roles", "string", 0, lambda o, n: "<none>"),
        _AGE,
        ("Version", "string", 0, _field("status", "nodeInfo", "kubeletVersion")),
    ],
    "Namespace": [_NAME, ("Status", "string", 0, _field("status", "phase")), _AGE],
    "Job": [
        _NAME,
        ("STATUS", "string", 0, _field("status", "state", "phase")),
        ("minAvailable", "integer", 0, _field("status", "minAvailable")),
        ("RUNNINGS", "integer", 0, _field("status", "running")),
        _AGE,
        ("QUEUE", "string", 1, _field("spec", "queue")),
    ],
    "PodGroup": [
        _NAME,
        ("STATUS", "string", 0, _field("status", "phase")),
        ("minMember", "integer", 0, _field("spec", "minMember")),
        ("RUNNINGS", "integer", 0, _field("status", "running")),
        _AGE,
        ("QUEUE", "string", 1, _field("spec", "queue")),
    ],
    "Queue": [
        _NAME,
        ("STATE", "string", 0, _field("status", "state")),
        _AGE,
        ("PARENT", "string", 1, _field("spec", "parent")),
    ],
    # Volcano's HyperNode CRD printer columns.
    "HyperNode": [
        _NAME,
        ("Tier", "string", 0, _field("spec", "tier")),
        ("TierName", "string", 0, _field("spec", "tierName")),
        ("NodeCount", "integer", 0, _field("status", "nodeCount")),
        _AGE,
    ],
}


def table(
    kind: Kind,
    objects: list[dict[str, Any]],
    resource_version: str,
    now: datetime,
    continue_token: str | None = None,
) -> dict[str, Any]:
    columns = _COLUMNS.get(kind.kind, [_NAME, _AGE])
    metadata: dict[str, Any] = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": [
            {
                "name": name,
                "type": type_,
                "format": "name" if name == "Name" else "",
                "description": "",
                "priority": priority,
            }
            for name, type_, priority, _ in columns
        ],
        "rows": [
            {
                "cells": [cell(obj, now) for *_, cell in columns],
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": obj["metadata"],
                },
            }
            for obj in objects
        ],
    }
