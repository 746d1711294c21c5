"""Rows the scheduler's fault tests seed its tables with (as ingest would have written them), and
what they read back: the state of every bind decision."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from shared.storage import tables


async def add_node_and_queue(connection: AsyncConnection, *, cpu_milli: int) -> None:
    """Node `n` of `cpu_milli` CPU, and the default queue."""
    node = {"name": "n", "allocatable": {"cpu": cpu_milli, "memory": 2**34, "pods": 110000}}
    await connection.execute(tables.Node.__table__.insert(), [{**node, "labels": {}, "resource_version": 1}])
    await connection.execute(tables.Queue.__table__.insert(), [{"name": "default", "resource_version": 1}])


async def add_gang(connection: AsyncConnection, name: str, *, min_member: int, created: datetime) -> None:
    group = {"uid": name, "namespace": "default", "name": name, "min_member": min_member}
    await connection.execute(
        tables.PodGroup.__table__.insert(),
        [{**group, "phase": "Inqueue", "created_at": created, "resource_version": 1}],
    )


async def add_pod(
    connection: AsyncConnection, uid: str, group: str, *, created: datetime, node: str | None = None
) -> None:
    """Pod `uid` (also its name) of one CPU in gang `group`, bound to `node` if given."""
    pod = {"uid": uid, "namespace": "default", "name": uid, "group_name": group, "node_name": node}
    await connection.execute(
        tables.Pod.__table__.insert(),
        [{**pod, "request": {"cpu": 1000, "pods": 1000}, "created_at": created, "resource_version": 1}],
    )


async def add_bind_decision(
    connection: AsyncConnection, gang: str, pod: str, *, state: str, created: datetime, epoch: int = 1
) -> None:
    """Cycle 1 of `epoch` (the first leader's by default) decided `pod` of `gang` onto n at `created`."""
    decision = {"epoch": epoch, "cycle": 1, "kind": "bind", "gang_uid": gang, "pod_uid": pod, "node": "n"}
    await connection.execute(
        tables.Decision.__table__.insert(), [{**decision, "state": state, "created_at": created}]
    )


async def bind_states(engine: AsyncEngine) -> list[tuple[str, str]]:
    """(pod, state) of every bind decision."""
    async with engine.connect() as connection:
        rows = (
            await connection.execute(
                select(tables.Decision.pod_uid, tables.Decision.state).where(tables.Decision.kind == "bind")
            )
        ).all()
    return sorted((pod, state) for pod, state in rows)
