"""The scheduling loop on a real PostgreSQL: what a cycle commits for a gang that keeps waiting.

The cluster has two nodes of 1 CPU and the gang one pod of 1.5 CPU: it fits the cluster and its
queue, but no node.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from services.scheduler.cycle_loop import CycleLoop
from services.scheduler.ingest import Ingester
from services.scheduler.leadership import Leadership
from shared.clock import SystemClock
from shared.messages.cluster import ObjectChanged
from shared.messages.envelope import CloudEvent, new_event
from shared.storage import tables
from shared.storage.engine import make_sessions

pytestmark = pytest.mark.integration


def changed(obj: dict[str, Any], version: int = 1) -> CloudEvent[Any]:
    meta = obj["metadata"]
    meta["resourceVersion"] = str(version)
    data = ObjectChanged(
        kind=obj["kind"],
        namespace=meta.get("namespace"),
        name=meta["name"],
        uid=meta["uid"],
        resource_version=version,
        change="ADDED",
        object=obj,
    )  # type: ignore[arg-type]
    return new_event(data, source="test")


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "status": {
            "allocatable": {"cpu": "1", "memory": "4Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


PODGROUP = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "big", "namespace": "default", "uid": "uid-big"},
    "spec": {"minMember": 1, "queue": "default"},
    "status": {"phase": "Inqueue"},
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "big-0",
        "namespace": "default",
        "uid": "uid-big-0",
        "annotations": {"scheduling.k8s.io/group-name": "big"},
    },
    "spec": {
        "schedulerName": "volcano",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1500m", "memory": "1Gi"}}}],
    },
    "status": {"phase": "Pending"},
}


async def test_a_gang_that_keeps_waiting_is_recorded_and_announced_once(engine: AsyncEngine) -> None:
    sessions = make_sessions(engine)
    await Ingester(sessions, scheduler_names=["volcano"]).handle(
        [changed(node("a")), changed(node("b")), changed(PODGROUP), changed(POD)]
    )
    leadership = Leadership(sessions, holder="test", lease_seconds=30)
    assert await leadership.try_acquire_or_renew()
    loop = CycleLoop(sessions, leadership, clock=SystemClock(), period=1, decision_ttl=30)

    for _ in range(3):
        plan = await loop.run_once()
        assert [v.gang_uid for v in plan.verdicts] == ["uid-big"]

    async with engine.connect() as connection:
        verdicts = (await connection.execute(select(tables.GangVerdict))).all()
        announced = (
            await connection.scalars(
                select(tables.SchedulerOutbox.msg_id).where(
                    tables.SchedulerOutbox.subject.like("decisions.%"),
                )
            )
        ).all()
    assert [(v.name, v.reason, v.cycle) for v in verdicts] == [("big", "NotEnoughResources", 1)]
    assert "Insufficient cpu" in verdicts[0].message
    assert len(announced) == 1, "the Unschedulable verdict goes out once, not once per cycle"
