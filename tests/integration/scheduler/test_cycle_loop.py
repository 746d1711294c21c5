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
from services.scheduler.leadership import Leadership, LostLeadership
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
        verdicts = (await connection.execute(select(tables.GangVerdictRow))).all()
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


def small_pod(name: str, group: str) -> dict[str, Any]:
    return {
        **POD,
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "annotations": {"scheduling.k8s.io/group-name": group},
        },
        "spec": {**POD["spec"], "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]},
    }


def small_group(name: str) -> dict[str, Any]:
    return {**PODGROUP, "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}}


async def test_idle_cycles_decide_nothing_yet_stay_fenced_and_new_work_is_placed(engine: AsyncEngine) -> None:
    """Once every gang is placed and nothing changes, a cycle plans nothing new (it is skipped),
    but it still fences its leadership; a new gang is placed at the next cycle."""
    sessions = make_sessions(engine)
    ingester = Ingester(sessions, scheduler_names=["volcano"])
    await ingester.handle(
        [changed(node("a")), changed(small_group("one")), changed(small_pod("one-0", "one"))]
    )
    leadership = Leadership(sessions, holder="test", lease_seconds=30)
    assert await leadership.try_acquire_or_renew()
    loop = CycleLoop(sessions, leadership, clock=SystemClock(), period=1, decision_ttl=30)
    assert [b.node for g in (await loop.run_once()).binds for b in g.binds] == ["a"]

    # The bind is confirmed: the pod runs on its node, and nothing is left to do.
    running = {**small_pod("one-0", "one"), "status": {"phase": "Running"}}
    running["spec"] = {**running["spec"], "nodeName": "a"}
    await ingester.handle(
        [changed(running, 2), changed({**small_group("one"), "status": {"phase": "Running"}}, 2)]
    )
    for _ in range(3):
        assert not (await loop.run_once()).binds
    async with engine.connect() as connection:
        decided = (await connection.scalars(select(tables.Decision.kind))).all()
    assert decided == ["bind"], "idle cycles decide nothing"

    await ingester.handle([changed(small_group("two")), changed(small_pod("two-0", "two"))])
    assert [b.node for g in (await loop.run_once()).binds for b in g.binds] == ["a"]

    # Another scheduler took over: even a cycle with nothing to do finds it is no longer leader.
    for _ in range(2):
        await loop.run_once()  # "two" confirmed or not, the loop is idle or waiting
    async with sessions() as session, session.begin():
        await session.execute(tables.SchedulerLeader.__table__.update().values(holder="other", epoch=99))
    with pytest.raises(LostLeadership):
        await loop.run_once()
