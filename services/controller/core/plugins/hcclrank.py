"""The hcclrank job plugin: each pod's HCCL rank (Ascend collective communication) as an annotation.

OnPodCreate sets `hccl/rankIndex` unless the pod has it already: the value of a `RANK`
environment variable when a container sets one (the pytorch plugin does, if it ran first),
else the pod's index for the master task (`--master`, default `master`) and the master's
replicas plus the index for the worker task (`--worker`, default `worker`). Pods of other tasks
are left alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.controller.core.plugins.args import parse_flags
from services.controller.core.plugins.hosts import Json, pod_index, pod_task, task_named

NAME = "hcclrank"
RANK_ANNOTATION = "hccl/rankIndex"
_FLAGS: dict[str, str | int | bool] = {"master": "master", "worker": "worker"}


def _env_rank(pod: Json) -> str:
    for container in (pod.get("spec") or {}).get("containers") or ():
        for variable in container.get("env") or ():
            if variable.get("name") == "RANK":
                return str(variable.get("value") or "")
    return ""


def on_pod_create(pod: dict[str, Any], job: Json, args: Sequence[str]) -> None:
    annotations = pod.setdefault("metadata", {}).setdefault("annotations", {})
    if annotations.get(RANK_ANNOTATION):
        return
    rank = _env_rank(pod)
    if rank:
        annotations[RANK_ANNOTATION] = rank
        return
    flags = parse_flags(args, _FLAGS)
    task = pod_task(pod)
    if task not in (flags["master"], flags["worker"]):
        return
    index = pod_index(pod)
    if not index.isdigit():
        return
    if task == flags["master"]:
        annotations[RANK_ANNOTATION] = str(int(index))
    else:
        master = task_named(job, str(flags["master"])) or {}
        annotations[RANK_ANNOTATION] = str(int(master.get("replicas") or 0) + int(index))
