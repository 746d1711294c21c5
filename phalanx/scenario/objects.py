"""Reading Kubernetes objects the way a scenario talks about them; pure helpers for the judges.

Label selectors evaluated on a labels map, a file path resolved through a pod's volume mounts to
the ConfigMap or Secret key that holds it, Secret data decoded, a Volcano Job's gang size and
the marks an eviction leaves on a pod or in an Event. No I/O: the probes fetch, these read.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shared.volcano.keys import JOB_NAME as JOB_NAME_LABEL

Obj = Mapping[str, Any]

EVICTION_EVENT_REASONS = frozenset({"Evict", "Evicted", "Preempted", "Preempting"})

_REQUIREMENT = re.compile(
    r"^\s*(?P<neg>!)?\s*(?P<key>[A-Za-z0-9._/-]+)\s*"
    r"(?:(?P<op>==|!=|=|\s+in\s+|\s+notin\s+)\s*(?P<value>\([^)]*\)|[A-Za-z0-9._-]*))?\s*$"
)


def _split_requirements(selector: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [p for p in [*parts, current] if p.strip()]


def check_selector(selector: str) -> None:
    """Raise ValueError for a label selector that cannot be read."""
    for requirement in _split_requirements(selector):
        if not _REQUIREMENT.match(requirement):
            raise ValueError(f"cannot read label selector requirement {requirement.strip()!r}")


def selector_matches(selector: str, labels: Mapping[str, str] | None) -> bool:
    """Label selector semantics: `a=b`, `a!=b`, `a`, `!a`, `a in (x,y)`, `a notin (x)`."""
    labels = labels or {}
    for requirement in _split_requirements(selector):
        match = _REQUIREMENT.match(requirement)
        if match is None:
            return False
        key, op = match["key"], (match["op"] or "").strip()
        if match["neg"]:
            if key in labels:
                return False
            continue
        if not op:
            if key not in labels:
                return False
            continue
        raw = match["value"] or ""
        values = {v.strip() for v in raw.strip("()").split(",")} if raw.startswith("(") else {raw}
        present = labels.get(key)
        if op in ("=", "==", "in") and present not in values:
            return False
        if op in ("!=", "notin") and present in values:
            return False
    return True


def labels_of(obj: Obj) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def key_of(obj: Obj) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def uid_of(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def phase_of(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


# -- secrets and files ----------------------------------------------------------------------


def _decode(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return base64.b64decode(value, validate=True).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        return value


def decoded(obj: Obj) -> dict[str, Any]:
    """The object as a scenario compares it: a Secret's data decoded, as stringData holds it."""
    plain = dict(obj)
    if obj.get("kind") == "Secret":
        data, strings = obj.get("data"), obj.get("stringData")
        decoded_data = {k: _decode(v) for k, v in data.items()} if isinstance(data, Mapping) else {}
        # An apiserver folds stringData into data on write; a simulator may keep it apart.
        plain["data"] = {**decoded_data, **(strings if isinstance(strings, Mapping) else {})}
    return plain


@dataclass(frozen=True)
class FileSource:
    kind: str  # ConfigMap | Secret
    namespace: str
    name: str
    key: str


def _volume_source(volume: Obj, namespace: str, relative: str) -> FileSource | None:
    for kind, field, name_field in (
        ("ConfigMap", "configMap", "name"),
        ("Secret", "secret", "secretName"),
    ):
        source = volume.get(field)
        if not isinstance(source, Mapping):
            continue
        key = relative
        items = source.get("items")
        if items:
            chosen = [i for i in items if i.get("path") == relative]
            if not chosen:
                return None
            key = str(chosen[0].get("key"))
        return FileSource(kind, namespace, str(source.get(name_field) or ""), key)
    return None


def file_source(pod: Obj, path: str) -> FileSource | None:
    """Which ConfigMap or Secret key a container of `pod` sees at `path`, if any."""
    spec = pod.get("spec") or {}
    namespace = key_of(pod)[0]
    volumes = {v.get("name"): v for v in spec.get("volumes") or []}
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        for mount in container.get("volumeMounts") or []:
            volume = volumes.get(mount.get("name"))
            mount_path = str(mount.get("mountPath") or "").rstrip("/")
            if volume is None or not mount_path:
                continue
            if mount.get("subPath"):
                if path == mount_path:
                    return _volume_source(volume, namespace, str(mount["subPath"]))
            elif path.startswith(mount_path + "/"):
                found = _volume_source(volume, namespace, path[len(mount_path) + 1 :])
                if found is not None:
                    return found
    return None


def file_content(source: FileSource, holder: Obj | None) -> str | None:
    """The text at `source.key` in the fetched ConfigMap or Secret, None when it is not there."""
    if holder is None:
        return None
    if source.kind == "Secret":
        value = (decoded(holder).get("data") or {}).get(source.key)
    else:
        value = (holder.get("data") or {}).get(source.key)
        if value is None and source.key in (holder.get("binaryData") or {}):
            value = _decode(holder["binaryData"][source.key])
    return None if value is None else str(value)


# -- jobs and evictions -----------------------------------------------------------------------


def job_min_available(job: Obj) -> int:
    """The gang size: spec.minAvailable, else status.minAvailable, else every replica."""
    spec = job.get("spec") or {}
    for value in (spec.get("minAvailable"), (job.get("status") or {}).get("minAvailable")):
        if isinstance(value, int) and value > 0:
            return value
    return sum(int(task.get("replicas") or 0) for task in spec.get("tasks") or [])


def job_reached_running(job: Obj, pods: list[Obj]) -> bool:
    """At least minAvailable of the job's pods Running (pods: its namespace's live pods)."""
    namespace, name = key_of(job)
    running = sum(
        1
        for pod in pods
        if key_of(pod)[0] == namespace
        and labels_of(pod).get(JOB_NAME_LABEL) == name
        and phase_of(pod) == "Running"
    )
    return running >= max(1, job_min_available(job))


def shows_eviction(pod: Obj) -> bool:
    """A pod marked as evicted: DisruptionTarget, reason Evicted, or Ready=False by Evict."""
    status = pod.get("status") or {}
    if status.get("reason") in ("Evicted", "Preempting"):
        return True
    for condition in status.get("conditions") or []:
        if condition.get("type") == "DisruptionTarget" and condition.get("status") == "True":
            return True
        if condition.get("type") == "Ready" and condition.get("reason") == "Evict":
            return True
    return False


def evicted_pod_uid(event: Obj) -> str | None:
    """The uid of the pod a Kubernetes Event reports evicted or preempted, else None."""
    involved = event.get("involvedObject") or event.get("regarding") or {}
    if involved.get("kind") != "Pod" or event.get("reason") not in EVICTION_EVENT_REASONS:
        return None
    return str(involved.get("uid") or "") or None
