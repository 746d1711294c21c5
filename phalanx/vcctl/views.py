"""Pure: `job view`'s text, laid out as vcctl's (indented `Key: value` blocks, then Events)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

Json = dict[str, Any]


def _line(level: int, text: str) -> str:
    return "  " * level + text


def _json_or_none(value: object) -> str:
    return json.dumps(value, separators=(",", ":")) if value else "<none>"


def describe_job(job: Json) -> str:
    meta, spec, status = job["metadata"], job.get("spec", {}), job.get("status") or {}
    out = [
        f"Name:       \t{meta['name']}",
        f"Namespace:  \t{meta.get('namespace', '')}",
        f"Labels:     \t{_json_or_none(meta.get('labels'))}",
        f"Annotations:\t{_json_or_none(meta.get('annotations'))}",
        f"API Version:\t{job.get('apiVersion', '')}",
        f"Kind:       \t{job.get('kind', '')}",
        "Metadata:",
        _line(1, f"Creation Timestamp:\t{meta.get('creationTimestamp', '')}"),
        _line(1, f"Generation:        \t{meta.get('generation', 0)}"),
        _line(1, f"Resource Version:  \t{meta.get('resourceVersion', '')}"),
        _line(1, f"UID:               \t{meta.get('uid', '')}"),
        "Spec:",
        _line(1, f"Min Available:     \t{spec.get('minAvailable', 0)}"),
        _line(1, f"Queue:             \t{spec.get('queue', 'default')}"),
        _line(1, f"Scheduler Name:    \t{spec.get('schedulerName', '')}"),
        _line(1, "Plugins:"),
        *(
            _line(2, f"{name.capitalize()}:\t{args}")
            for name, args in sorted((spec.get("plugins") or {}).items())
        ),
        _line(1, "Tasks:"),
    ]
    for task in spec.get("tasks") or []:
        template = task.get("template", {}).get("spec", {})
        out += [_line(2, f"Name:\t{task.get('name', '')}"), _line(2, f"Replicas:\t{task.get('replicas', 0)}")]
        out.append(_line(2, "Containers:"))
        for container in template.get("containers") or []:
            resources = container.get("resources") or {}
            out += [
                _line(3, f"Name: \t{container.get('name', '')}"),
                _line(3, f"Image:\t{container.get('image', '')}"),
                _line(3, f"Command:\t{' '.join(container.get('command') or [])}"),
                _line(3, f"Requests:\t{_json_or_none(resources.get('requests'))}"),
                _line(3, f"Limits:  \t{_json_or_none(resources.get('limits'))}"),
            ]
        out.append(_line(2, f"Restart Policy:   \t{template.get('restartPolicy', '')}"))
    out.append("Status:")
    for key, label in (
        ("succeeded", "Succeeded:    "),
        ("pending", "Pending:      "),
        ("running", "Running:      "),
        ("failed", "Failed:       "),
        ("terminating", "Terminating:  "),
        ("unknown", "Unknown:      "),
        ("retryCount", "RetryCount:   "),
        ("minAvailable", "Min Available:"),
        ("version", "Version:      "),
    ):
        if status.get(key):
            out.append(_line(1, f"{label}\t{status[key]}"))
    out += [_line(1, "State:"), _line(2, f"Phase:\t{(status.get('state') or {}).get('phase', '')}")]
    conditions = status.get("conditions") or []
    if conditions:
        out.append(_line(1, "Conditions:"))
        out.append(_line(2, "Status\tTransitionTime"))
        out += [_line(2, f"{c.get('status', '')} \t{c.get('lastTransitionTime', '')}") for c in conditions]
    return "\n".join(out)


def about_job(event: Json, job: Json) -> bool:
    """Events of the job itself (vcctl matches `<job>.` name prefixes; we also match the object)."""
    involved = event.get("involvedObject") or {}
    name = job["metadata"]["name"]
    return (involved.get("kind") == "Job" and involved.get("name") == name) or str(
        event.get("metadata", {}).get("name", "")
    ).startswith(name + ".")


def age(stamp: str | None, now: datetime | None = None) -> str:
    if not stamp:
        return "<unknown>"
    moment = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    seconds = int(((now or datetime.now(UTC)) - moment).total_seconds())
    if seconds < 120:
        return f"{max(seconds, 0)}s"
    if seconds < 3600 * 3:
        return f"{seconds // 60}m"
    if seconds < 86400 * 2:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def describe_events(events: list[Json]) -> str:
    if not events:
        return "Events: \t<none>"
    lines = ["Events:", f"{'Type':<15}\t{'Reason':<40}\t{'Age':<30}\t{'Form':<40}\tMessage"]
    lines.append("\t".join(f"{'-------':<{w}}" for w in (15, 40, 30, 40)) + "\t-------")
    for event in events:
        source = (event.get("source") or {}).get("component", "")
        when = age(
            event.get("lastTimestamp") or event.get("eventTime") or event["metadata"].get("creationTimestamp")
        )
        message = str(event.get("message", "")).strip()
        lines.append(
            f"{event.get('type', ''):<15}\t{event.get('reason', ''):<40}\t{when:<30}\t{source:<40}\t{message}"
        )
    return "\n".join(lines)
