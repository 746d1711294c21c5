"""Shell: what the console reads from the Kubernetes API: a Job's tasks and its PodGroup's conditions.

Read-only GETs; a missing object or an unreachable API gives an empty answer, since the page still
has the database's view to show.
"""

from __future__ import annotations

import contextlib
from typing import Any

from kubernetes_asyncio import client

from services.console.page_rows import Condition, TaskRow
from shared.kube.client import ApiError, request

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/{namespace}/jobs/{name}"
PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/{namespace}/podgroups/{name}"


class ClusterReader:
    def __init__(self, api: client.ApiClient) -> None:
        self.api = api

    async def _get(self, path: str) -> dict[str, Any]:
        with contextlib.suppress(ApiError, OSError, TimeoutError):
            return await request(self.api, "GET", path, timeout=5.0)
        return {}

    async def tasks(self, namespace: str, name: str) -> list[TaskRow]:
        job = await self._get(JOBS.format(namespace=namespace, name=name))
        return [
            TaskRow(str(t.get("name", "")), int(t.get("replicas") or 0), t.get("minAvailable"))
            for t in (job.get("spec") or {}).get("tasks") or []
        ]

    async def conditions(self, namespace: str, podgroup: str) -> list[Condition]:
        group = await self._get(PODGROUPS.format(namespace=namespace, name=podgroup))
        return [
            Condition(
                str(c.get("type", "")),
                str(c.get("status", "")),
                str(c.get("reason", "")),
                str(c.get("message", "")),
                str(c.get("lastTransitionTime", "")),
            )
            for c in (group.get("status") or {}).get("conditions") or []
        ]
