"""Host names of a job's pods, as every Volcano job plugin spells them.

`<hostname or <job>-<task>-<i>>.<subdomain or <job>>`: the svc plugin's headless Service makes
these resolve; svc, ssh, pytorch, tensorflow and mpi all list them. A template with its own
`hostname` names one host for the whole task.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.volcano import keys
from shared.volcano.objects import JobObject, PodObject

Json = Mapping[str, Any]


def job_name(job: Json) -> str:
    return str(JobObject(job).name)


def tasks(job: Json) -> list[Json]:
    return list((job.get("spec") or {}).get("tasks") or ())


def task_named(job: Json, name: str) -> Json | None:
    return next((t for t in tasks(job) if t.get("name") == name), None)


def _template_spec(task: Json) -> Json:
    return (task.get("template") or {}).get("spec") or {}


def domain_name(job: Json, task: Json, index: int) -> str:
    spec = _template_spec(task)
    host = spec.get("hostname") or f"{job_name(job)}-{task.get('name')}-{index}"
    return f"{host}.{spec.get('subdomain') or job_name(job)}"


# Host lists end up in a ConfigMap, an environment variable or a file, all held to Kubernetes'
# 1 MiB object limit: no more hosts than that could hold are ever listed, so a task with two
# billion replicas costs no more memory than one that could actually run.
MAX_LISTED_HOSTS = 20_000


def listed_count(task: Json) -> int:
    """How many of the task's hosts are listed: its replicas (one if the template fixes
    `hostname`), at most MAX_LISTED_HOSTS."""
    count = int(task.get("replicas") or 0)
    if _template_spec(task).get("hostname"):
        count = min(count, 1)
    return max(0, min(count, MAX_LISTED_HOSTS))


def task_hosts(job: Json, task: Json) -> list[str]:
    """Every listed host of the task (see `listed_count`)."""
    return [domain_name(job, task, i) for i in range(listed_count(task))]


def pod_index(pod: Json) -> str:
    """The pod's index as plugins read it: the last `-` segment of its name."""
    parts = str(PodObject(pod).name).split("-")
    return parts[-1] if len(parts) >= 3 else ""


def pod_task(pod: Json) -> str:
    return str(PodObject(pod).annotation(keys.TASK_SPEC) or keys.DEFAULT_TASK_SPEC)


def all_containers(pod: dict[str, Any], *, init: bool = True) -> list[dict[str, Any]]:
    spec = pod.setdefault("spec", {})
    found: list[dict[str, Any]] = list(spec.get("containers") or ())
    if init:
        found += list(spec.get("initContainers") or ())
    return found


def add_env(container: dict[str, Any], *pairs: dict[str, Any]) -> None:
    container.setdefault("env", []).extend(pairs)


def add_port(container: dict[str, Any], name: str, port: int) -> None:
    """Open `port` unless the container already declares it."""
    ports = container.setdefault("ports", [])
    if not any(int(p.get("containerPort", 0)) == port for p in ports):
        ports.append({"name": name, "containerPort": port})
