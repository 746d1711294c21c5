"""The mpi job plugin: the master learns its workers' hosts, every container opens the ssh port.

Master-task pods get `MPI_HOST`, the comma-separated worker hosts (the MPI hostfile's content);
all containers and init containers open `--port` (22) as `mpijob-port`. Volcano's webhook adds
the svc and ssh plugins that make those hosts resolvable and reachable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.controller.core.plugins.args import parse_flags
from services.controller.core.plugins.hosts import (
    Json,
    add_env,
    add_port,
    all_containers,
    pod_task,
    task_hosts,
    task_named,
)

NAME = "mpi"
_FLAGS: dict[str, str | int | bool] = {"master": "master", "worker": "worker", "port": 22}


def worker_hosts(job: Json, args: Sequence[str]) -> str:
    """MPI_HOST: the worker task's hosts joined by commas ("" without workers)."""
    flags = parse_flags(args, _FLAGS)
    worker = task_named(job, str(flags["worker"]))
    return ",".join(task_hosts(job, worker)) if worker else ""


def on_pod_create(pod: dict[str, Any], job: Json, args: Sequence[str]) -> None:
    flags = parse_flags(args, _FLAGS)
    is_master = pod_task(pod) == flags["master"]
    if is_master and task_named(job, str(flags["worker"])) is None:
        return
    hosts = worker_hosts(job, args)
    for container in all_containers(pod):
        add_port(container, "mpijob-port", int(flags["port"]))
        if is_master:
            add_env(container, {"name": "MPI_HOST", "value": hosts})
