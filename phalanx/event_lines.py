"""What one audit event says, as a line for a person, and whether it concerns a job or a queue.

Pure: a CloudEvent document (the `phalanx.audit.recorded.v1` envelope as JSON) in, text or a yes/no
out. `phalanx events watch` (phalanx/events.py) reads the stream and prints through these.

A line names the moment, the deciding service and its action, the object, and what changed:
`Pending → Running` for a phase, the nodes a gang's pods were placed on, the pods evicted, for
which gang and why, the scheduler's reason for leaving a gang waiting, the admission's verdict.
"""

from __future__ import annotations

import fnmatch
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

# A Volcano Job's PodGroup is named `<job>-<job uid>` (services/controller/jobs.py).
_JOB_PODGROUP = re.compile(r"^(?P<job>.+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
ACTION_WIDTH = 26


@dataclass(frozen=True)
class Selection:
    """Which events to show: `type_glob` on `<service>.<action>`, `job` as NAME or NAMESPACE/NAME."""

    type_glob: str | None = None
    job: str | None = None
    queue: str | None = None

    def admits(self, document: Mapping[str, Any]) -> bool:
        data = document.get("data")
        if not isinstance(data, Mapping):
            return not (self.type_glob or self.job or self.queue)
        if self.type_glob and not fnmatch.fnmatch(
            f"{data.get('service')}.{data.get('action')}", self.type_glob
        ):
            return False
        if self.job and not _about_job(data, self.job):
            return False
        return not self.queue or _about_queue(data, self.queue)


def _about_job(data: Mapping[str, Any], wanted: str) -> bool:
    namespace, _, name = wanted.rpartition("/")
    if namespace and data.get("namespace") != namespace:
        return False
    kind, subject = data.get("kind"), str(data.get("name") or "")
    if kind == "PodGroup":
        # A Volcano Job's PodGroup, or the PodGroup of a job another operator runs (same name).
        owner = _JOB_PODGROUP.match(subject)
        return subject == name or (owner is not None and owner["job"] == name)
    return kind != "Queue" and subject == name


def _about_queue(data: Mapping[str, Any], wanted: str) -> bool:
    if data.get("kind") == "Queue":
        return data.get("name") == wanted
    details = data.get("details")
    return isinstance(details, Mapping) and details.get("queue") == wanted


def line(document: Mapping[str, Any]) -> str:
    data = document.get("data")
    if not isinstance(data, Mapping):
        return orjson.dumps(document).decode()
    where = "/".join(str(part) for part in (data.get("namespace"), data.get("name")) if part)
    action = f"{data.get('service')}.{data.get('action')}"
    parts = [
        _moment(str(document.get("time", ""))),
        action.ljust(ACTION_WIDTH),
        f"{data.get('kind')} {where}",
    ]
    change = what_changed(data)
    if change:
        parts.append(change)
    return "  ".join(parts)


def _moment(time: str) -> str:
    """`2026-11-25T17:08:34.105Z`: the date, the time to the millisecond, UTC."""
    return f"{time[:23]}Z" if len(time) >= 19 else time


def what_changed(data: Mapping[str, Any]) -> str:
    details = data.get("details") if isinstance(data.get("details"), Mapping) else {}
    assert isinstance(details, Mapping)
    action = data.get("action")
    if action == "phase-changed" and details.get("phase"):
        text = f"{details.get('previous') or '(new)'} → {details['phase']}"
        if details.get("retryCount"):
            text += f" (retry {details['retryCount']})"
        return _with_why(text, data)
    if action == "enqueued":
        return f"enqueued in queue {details.get('queue', '?')}: Pending → Inqueue"
    if action in ("placed", "bound") and isinstance(details.get("pods"), Mapping):
        text = f"{len(details['pods'])} pods on {_by_node(details['pods'])}"
        if details.get("enqueued"):  # admitted and placed in one cycle: one event says both
            text = f"enqueued in queue {details.get('queue', '?')} and placed: {text}"
        refused = details.get("refused")
        if isinstance(refused, Mapping) and refused:
            text += "; refused: " + ", ".join(f"{pod} ({why})" for pod, why in refused.items())
        return text
    if action == "evicted" and isinstance(details.get("pods"), list):
        text = f"evicted {', '.join(map(str, details['pods'])) or 'no pods'}"
        why = [str(data["reason"])] if data.get("reason") else []
        preemptor = details.get("preemptor_name") or details.get("preemptor")
        if preemptor:
            why.append(f"for {preemptor}")
        return f"{text} ({', '.join(why)})" if why else text
    if action in ("admitted", "denied"):
        who = str(details.get("operation") or "")
        if details.get("user"):
            who += f" by {details['user']}"
        text = f"{data.get('outcome')} ({who.strip()})" if who.strip() else str(data.get("outcome"))
        return f"{text}: {data['message']}" if data.get("message") else text
    return _with_why(str(data.get("outcome") or ""), data)


def _with_why(text: str, data: Mapping[str, Any]) -> str:
    reason, message = data.get("reason"), data.get("message")
    why = ": ".join(str(part) for part in (reason, message) if part)
    return f"{text} — {why}" if why and text else (why or text)


def _by_node(pods: Mapping[str, Any]) -> str:
    """`node-0 (a, b), node-1 (c)`: which node each pod went to, grouped by node."""
    nodes: dict[str, list[str]] = defaultdict(list)
    for pod, node in pods.items():
        nodes[str(node)].append(str(pod))
    return ", ".join(f"{node} ({', '.join(sorted(names))})" for node, names in sorted(nodes.items()))
