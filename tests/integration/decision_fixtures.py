"""Helpers of the integration tests that carry scheduler decisions out against the simulator: a
scheduler's lease row, and a plain pod that asks for `volcano`."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from shared.kube.client import request


async def lead(engine: AsyncEngine, epoch: int) -> None:
    """Make scheduler epoch `epoch` the leading one (its lease row, good for an hour)."""
    async with engine.begin() as connection:
        await connection.execute(
            text(
                "INSERT INTO scheduler_leader (id, holder, epoch, expires_at) "
                "VALUES (1, 'scheduler-a', :epoch, now() + interval '1 hour')"
            ),
            {"epoch": epoch},
        )


async def new_plain_pod(api: client.ApiClient, name: str) -> dict[str, Any]:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "busybox"}]},
    }
    created: dict[str, Any] = await request(api, "POST", "/api/v1/namespaces/default/pods", body=body)
    return created
