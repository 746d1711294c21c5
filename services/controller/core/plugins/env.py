"""The env job plugin: every container learns its pod's index within its task.

Applied by `plugins.apply_pod_plugins` while the controller builds a pod: `VK_TASK_INDEX` (the
legacy name) and `VC_TASK_INDEX` on all containers and init containers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.controller.core.plugins.hosts import Json, add_env, all_containers, pod_index

NAME = "env"


def on_pod_create(pod: dict[str, Any], job: Json, args: Sequence[str]) -> None:
    index = pod_index(pod)
    for container in all_containers(pod):
        add_env(
            container,
            {"name": "VK_TASK_INDEX", "value": index},
            {"name": "VC_TASK_INDEX", "value": index},
        )
