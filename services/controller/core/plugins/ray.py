"""The ray job plugin: a Ray head and its workers started by their commands, and the head's ports.

OnPodCreate gives the head task's `head` container (`--headContainer`) the command
`ray start --head --block ...` and the ports `gcs`, `dashboard` and `client-server` (unless it
already declares them), and each worker's `worker` container (`--workerContainer`) the command
`ray start --block --address=<head pod 0's host>:<port>`. OnJobAdd gives the job a Service named
after it that selects the head pod on those three ports, unless the job also names the svc plugin,
whose headless Service of the same name stands in for it (in Volcano whichever plugin runs first
creates it, and Volcano's webhook adds svc to every ray job). A job without the head task gets
its pods unchanged (Volcano fails their creation with "job <j> doesn't have head task <t>").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.controller.core.owners import job_ref
from services.controller.core.plugins.args import parse_flags
from services.controller.core.plugins.hosts import Json, add_port, domain_name, job_name, pod_task, task_named
from shared.volcano import keys
from shared.volcano.objects import JobObject

NAME = "ray"
_FLAGS: dict[str, str | int | bool] = {
    "head": "head",
    "headContainer": "head",
    "worker": "worker",
    "workerContainer": "worker",
    "port": 6379,
    "dashboardPort": 8265,
    "clientPort": 10001,
}
GCS_PORT = "gcs"
DASHBOARD_PORT = "dashboard"
CLIENT_SERVER_PORT = "client-server"


def on_pod_create(pod: dict[str, Any], job: Json, args: Sequence[str]) -> None:
    flags = parse_flags(args, _FLAGS)
    head = task_named(job, str(flags["head"]))
    if head is None:
        return
    port, dashboard, client = int(flags["port"]), int(flags["dashboardPort"]), int(flags["clientPort"])
    task = pod_task(pod)
    for container in pod.setdefault("spec", {}).get("containers") or []:
        if task == flags["head"] and container.get("name") == flags["headContainer"]:
            for name, number in ((GCS_PORT, port), (DASHBOARD_PORT, dashboard), (CLIENT_SERVER_PORT, client)):
                add_port(container, name, number)
            container["command"] = [
                "sh",
                "-c",
                f"ray start --head --block --dashboard-host=0.0.0.0 --port={port} "
                f"--dashboard-port={dashboard} --ray-client-server-port={client}",
            ]
        if task == flags["worker"] and container.get("name") == flags["workerContainer"]:
            address = f"{domain_name(job, head, 0)}:{port}"
            container["command"] = ["sh", "-c", f"ray start --block --address={address}"]


def objects(job: Json, args: Sequence[str]) -> list[dict[str, Any]]:
    """The head's Service (OnJobAdd), when the job has a head task."""
    flags = parse_flags(args, _FLAGS)
    if task_named(job, str(flags["head"])) is None:
        return []
    namespace = JobObject(job).namespace
    ports = ((GCS_PORT, "port"), (DASHBOARD_PORT, "dashboardPort"), (CLIENT_SERVER_PORT, "clientPort"))
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": job_name(job),
                "namespace": namespace,
                "ownerReferences": [job_ref(job)],
            },
            "spec": {
                "selector": {
                    keys.JOB_NAME: job_name(job),
                    keys.JOB_NAMESPACE: str(namespace),
                    keys.TASK_SPEC: str(flags["head"]),
                },
                "ports": [
                    {"name": name, "port": int(flags[flag]), "targetPort": name, "protocol": "TCP"}
                    for name, flag in ports
                ],
            },
        }
    ]
