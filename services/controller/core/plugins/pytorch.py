"""The pytorch job plugin: torch.distributed's rendezvous variables on every pod of the job.

`MASTER_ADDR` (master pod 0's host), `MASTER_PORT`, `WORLD_SIZE` (master + worker replicas) and
`RANK` (0 for the master, index+1 for workers), the port opened as `pytorchjob-port`, and with
`--wait-master-enabled` a `wait-for-master` init container on workers. No-op without a master.
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
    domain_name,
    pod_index,
    pod_task,
    task_named,
    tasks,
)

NAME = "pytorch"
_FLAGS: dict[str, str | int | bool] = {
    "master": "master",
    "worker": "worker",
    "port": 23456,
    "wait-master-enabled": False,
    "wait-master-timeout": 300,
    "wait-master-image": "busybox:1.36.1",
}


def wait_for_master_script(address: str, port: int, timeout: int) -> str:
    return (
        f'echo "Waiting for master node {address}:{port} to be ready..."\n'
        f"TIMEOUT={timeout}\n"
        "ELAPSED=0\n"
        f"until {{ nc -z {address} {port} || echo > /dev/tcp/{address}/{port}; }} 2>/dev/null; do\n"
        "  if [ $ELAPSED -ge $TIMEOUT ]; then\n"
        '    echo "Timeout waiting for master after ${TIMEOUT} seconds"\n'
        "    exit 1\n"
        "  fi\n"
        '  echo "Master not ready yet, retrying in 2 seconds... (elapsed: ${ELAPSED}s)"\n'
        "  sleep 2\n"
        "  ELAPSED=$((ELAPSED + 2))\n"
        "done\n"
        'echo "Master node is ready!"'
    )


def on_pod_create(pod: dict[str, Any], job: Json, args: Sequence[str]) -> None:
    flags = parse_flags(args, _FLAGS)
    master_name, worker_name = str(flags["master"]), str(flags["worker"])
    port = int(flags["port"])
    master = task_named(job, master_name)
    if master is None:
        return
    address = domain_name(job, master, 0)
    task = pod_task(pod)
    rank: int | None = 0 if task == master_name else None
    if task == worker_name:
        rank = int(pod_index(pod)) + 1
        if flags["wait-master-enabled"]:
            inits = pod["spec"].setdefault("initContainers", [])
            if not any(c.get("name") == "wait-for-master" for c in inits):
                inits.append(
                    {
                        "name": "wait-for-master",
                        "image": str(flags["wait-master-image"]),
                        "command": [
                            "sh",
                            "-c",
                            wait_for_master_script(address, port, int(flags["wait-master-timeout"])),
                        ],
                    }
                )
    world_size = sum(
        int(t.get("replicas") or 0) for t in tasks(job) if t.get("name") in (master_name, worker_name)
    )
    for container in all_containers(pod, init=False):
        add_port(container, "pytorchjob-port", port)
        add_env(
            container,
            {"name": "MASTER_ADDR", "value": address},
            {"name": "MASTER_PORT", "value": str(port)},
            {"name": "WORLD_SIZE", "value": str(world_size)},
        )
        if rank is not None:
            add_env(container, {"name": "RANK", "value": str(rank)})
