"""The tensorflow job plugin: `TF_CONFIG` for every container, naming the cluster and the pod's
own role and index.

Roles come from task names (`--ps`, `--worker`, `--chief`, `--evaluator`; hosts on `--port`
2222). A job of one task with one replica needs no cluster, so it gets nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from services.controller.core.plugins.args import parse_flags
from services.controller.core.plugins.hosts import (
    MAX_LISTED_HOSTS,
    Json,
    add_env,
    all_containers,
    domain_name,
    pod_index,
    pod_task,
    tasks,
)

NAME = "tensorflow"
_FLAGS: dict[str, str | int | bool] = {
    "ps": "ps",
    "worker": "worker",
    "chief": "chief",
    "evaluator": "evaluator",
    "port": 2222,
}
_ROLES = ("ps", "worker", "chief", "evaluator")


def tf_config(job: Json, pod: Json, args: Sequence[str]) -> dict[str, Any]:
    flags = parse_flags(args, _FLAGS)
    role_of = {str(flags[role]): role for role in _ROLES}
    cluster: dict[str, list[str]] = {}
    for task in tasks(job):
        role = role_of.get(str(task.get("name", "")))
        if role is None:
            continue
        count = max(0, min(int(task.get("replicas") or 0), MAX_LISTED_HOSTS))
        hosts = [f"{domain_name(job, task, i)}:{int(flags['port'])}" for i in range(count)]
        if hosts:  # Go's omitempty drops empty role lists
            cluster[role] = hosts
    ordered = {role: cluster[role] for role in _ROLES if role in cluster}
    task_name = pod_task(pod)
    return {
        "cluster": ordered,
        "task": {"type": role_of.get(task_name, task_name), "index": int(pod_index(pod))},
    }


def on_pod_create(pod: dict[str, Any], job: Json, args: Sequence[str]) -> None:
    job_tasks = tasks(job)
    if len(job_tasks) == 1 and int(job_tasks[0].get("replicas") or 0) == 1:
        return
    value = json.dumps(tf_config(job, pod, args), separators=(",", ":"))
    for container in all_containers(pod, init=False):
        add_env(container, {"name": "TF_CONFIG", "value": value})
