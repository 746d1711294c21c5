"""The scheduler's ingester on a real PostgreSQL: replays and reorderings never move state back."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from services.scheduler.ingest import Ingester
from services.scheduler.snapshot_reader import ShellMemory, read_snapshot
from shared.messages.cluster import KindResynced, ObjectChanged
from shared.messages.envelope import CloudEvent, new_event
from shared.storage import tables
from shared.storage.engine import make_sessions

pytestmark = pytest.mark.integration


def pod(
    name: str, version: int, *, node: str | None = None, change: str = "MODIFIED", relist: str | None = None
) -> CloudEvent[Any]:
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "resourceVersion": str(version),
            "annotations": {"scheduling.k8s.io/group-name": "g"},
        },
        "spec": {
            "schedulerName": "volcano",
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
        },
        "status": {"phase": "Running" if node else "Pending"},
    }
    data = ObjectChanged(
        kind="Pod",
        namespace="default",
        name=name,
        uid=f"uid-{name}",
        resource_version=version,
        change=change,
        relist_id=relist,
        object=obj,
    )  # type: ignore[arg-type]
    return new_event(data, source="test")


async def rows(engine: AsyncEngine) -> dict[str, tuple[str | None, int, bool]]:
    async with engine.connect() as connection:
        result = await connection.execute(
            select(tables.Pod.name, tables.Pod.node_name, tables.Pod.resource_version, tables.Pod.deleted)
        )
        return {name: (node, version, deleted) for name, node, version, deleted in result}


async def test_projection_keeps_requests_and_placement(engine: AsyncEngine) -> None:
    ingester = Ingester(make_sessions(engine), scheduler_names=["volcano"])
    await ingester.handle([pod("p", 5)])
    async with engine.connect() as connection:
        row = (await connection.execute(select(tables.Pod))).one()
    assert row.request == {"cpu": 500, "memory": 1073741824000, "pods": 1000}
    assert row.group_name == "g"
    assert row.ours


async def test_replayed_and_reordered_events_never_move_state_back(engine: AsyncEngine) -> None:
    ingester = Ingester(make_sessions(engine), scheduler_names=["volcano"])
    pending, bound, gone = pod("p", 5), pod("p", 7, node="n1"), pod("p", 9, node="n1", change="DELETED")
    await ingester.handle([pending, bound])
    assert (await rows(engine))["p"] == ("n1", 7, False)
    await ingester.handle([pending])  # an old event redelivered late
    assert (await rows(engine))["p"] == ("n1", 7, False)
    await ingester.handle([gone, bound, pending])  # deleted, then stale events of the same pod
    assert (await rows(engine))["p"] == ("n1", 9, True)
    await ingester.handle([gone])  # the same deletion twice
    assert (await rows(engine))["p"] == ("n1", 9, True)


async def test_a_bind_seen_in_the_cluster_confirms_the_decision(engine: AsyncEngine) -> None:
    sessions = make_sessions(engine)
    async with sessions() as session, session.begin():
        session.add(tables.Decision(epoch=1, cycle=1, kind="bind", gang_uid="g", pod_uid="uid-p", node="n1"))
    await Ingester(sessions, scheduler_names=["volcano"]).handle([pod("p", 5, node="n1")])
    async with engine.connect() as connection:
        assert (await connection.execute(select(tables.Decision.state))).scalar_one() == "confirmed"


async def test_a_relist_tombstones_what_vanished_unseen(engine: AsyncEngine) -> None:
    ingester = Ingester(make_sessions(engine), scheduler_names=["volcano"])
    await ingester.handle([pod("kept", 3), pod("vanished", 4)])
    relisted = pod("kept", 3, relist="r1")
    marker = new_event(KindResynced(kind="Pod", relist_id="r1", resource_version=10), source="test")
    await ingester.handle([relisted, marker])
    state = await rows(engine)
    assert state["kept"][2] is False
    assert state["vanished"][2] is True


def changed(kind: str, obj: dict[str, Any], change: str = "ADDED") -> CloudEvent[Any]:
    meta = obj["metadata"]
    data = ObjectChanged(
        kind=kind,
        namespace=meta.get("namespace"),
        name=meta["name"],
        uid=meta["uid"],
        resource_version=int(meta["resourceVersion"]),
        change=change,
        object=obj,
    )  # type: ignore[arg-type]
    return new_event(data, source="test")


async def test_hierarchy_and_task_topology_annotations_reach_the_snapshot(engine: AsyncEngine) -> None:
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {
            "name": "prod",
            "uid": "uid-prod",
            "resourceVersion": "3",
            "annotations": {
                "volcano.sh/hierarchy": "root/eng/prod",
                "volcano.sh/hierarchy-weights": "1/2/8",
                "kubectl.kubernetes.io/last-applied-configuration": "{...}",
            },
        },
        "spec": {"weight": 1},
    }
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": "tf",
            "namespace": "default",
            "uid": "uid-tf",
            "resourceVersion": "4",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "annotations": {"volcano.sh/task-topology-affinity": "ps,worker", "other": "x"},
        },
        "spec": {"minMember": 2, "queue": "prod"},
        "status": {"phase": "Inqueue"},
    }
    sessions = make_sessions(engine)
    await Ingester(sessions, scheduler_names=["volcano"]).handle(
        [changed("Queue", queue), changed("PodGroup", group)]
    )
    async with sessions() as session, session.begin():
        read = await read_snapshot(session, now=datetime.now(UTC), expire_before=None, memory=ShellMemory())
    prod = next(q for q in read.snapshot.queues if q.name == "prod")
    # only what the core reads is kept
    assert prod.annotations == {
        "volcano.sh/hierarchy": "root/eng/prod",
        "volcano.sh/hierarchy-weights": "1/2/8",
    }
    (tf,) = read.snapshot.gangs
    assert tf.annotations == {"volcano.sh/task-topology-affinity": "ps,worker"}


async def test_a_terminating_pod_is_releasing_in_the_snapshot_until_it_is_gone(engine: AsyncEngine) -> None:
    """A pod marked for deletion keeps its node through its grace period, as Volcano's Releasing
    task: the scheduler counts its room as freeing, not free, however long the kubelet takes."""
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": "g",
            "namespace": "default",
            "uid": "uid-g",
            "resourceVersion": "2",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"minMember": 1, "queue": "default"},
        "status": {"phase": "Running"},
    }
    terminating = pod("p", 6, node="n1")
    terminating.data.object["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:30Z"
    sessions = make_sessions(engine)
    await Ingester(sessions, scheduler_names=["volcano"]).handle([changed("PodGroup", group), terminating])

    async with sessions() as session, session.begin():
        read = await read_snapshot(session, now=datetime.now(UTC), expire_before=None, memory=ShellMemory())
    ((task,),) = [g.tasks for g in read.snapshot.gangs]
    assert (task.node, task.status) == ("n1", "Releasing")


def budget(version: int, allowed: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "keep", "namespace": "ml", "uid": "uid-keep", "resourceVersion": str(version)},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
        "status": {"disruptionsAllowed": allowed, "currentHealthy": 2, "desiredHealthy": 1},
    }


async def test_a_disruption_budget_reaches_the_snapshot_and_follows_its_status(engine: AsyncEngine) -> None:
    """The pdb plugin reads a budget's selector and its current disruptionsAllowed, kept in the
    mirror as the status changes and dropped when the budget is deleted."""
    sessions = make_sessions(engine)
    ingester = Ingester(sessions, scheduler_names=["volcano"])
    memory = ShellMemory()

    async def budgets() -> list[tuple[str, str, Any, int]]:
        async with sessions() as session, session.begin():
            read = await read_snapshot(session, now=datetime.now(UTC), expire_before=None, memory=memory)
        return [(b.namespace, b.name, b.selector, b.disruptions_allowed) for b in read.snapshot.budgets]

    await ingester.handle([changed("PodDisruptionBudget", budget(3, allowed=1))])
    assert await budgets() == [("ml", "keep", {"matchLabels": {"app": "db"}}, 1)]
    await ingester.handle([changed("PodDisruptionBudget", budget(4, allowed=0))])
    assert await budgets() == [("ml", "keep", {"matchLabels": {"app": "db"}}, 0)]
    await ingester.handle([changed("PodDisruptionBudget", budget(5, allowed=0), "DELETED")])
    assert await budgets() == []


async def test_a_relist_of_volumes_leaves_claims_and_classes_alone(engine: AsyncEngine) -> None:
    # Claims, volumes and StorageClasses share storage_objects: a relist of one kind tombstones
    # only that kind's rows.
    def storage(kind: str, name: str, version: int, namespace: str | None = None) -> CloudEvent[Any]:
        meta = {"name": name, "uid": f"uid-{name}", "resourceVersion": str(version)}
        return changed(kind, {"metadata": {**meta, **({"namespace": namespace} if namespace else {})}})

    ingester = Ingester(make_sessions(engine), scheduler_names=["volcano"])
    await ingester.handle(
        [
            storage("PersistentVolume", "pv-gone", 1),
            storage("PersistentVolumeClaim", "data", 2, "default"),
            storage("StorageClass", "local", 3),
        ]
    )
    marker = new_event(
        KindResynced(kind="PersistentVolume", relist_id="r1", resource_version=10), source="test"
    )
    await ingester.handle([marker])
    async with engine.connect() as connection:
        table = tables.StorageObject
        deleted = dict((await connection.execute(select(table.key, table.deleted))).all())
    assert deleted == {
        "PersistentVolume//pv-gone": True,
        "PersistentVolumeClaim/default/data": False,
        "StorageClass//local": False,
    }


async def test_dra_objects_and_pending_binds_reach_the_snapshot_as_taken_devices(engine: AsyncEngine) -> None:
    """DeviceClasses, ResourceSlices and ResourceClaims kept in device_objects: an allocated claim's
    devices and those a pending bind decision gave (decisions.devices) are taken; a pending pod's
    claim resolves to the devices its class admits (#26 item 4)."""
    sessions = make_sessions(engine)
    ingester = Ingester(sessions, scheduler_names=["volcano"])
    driver = "gpu.example.com"
    slice_devices = [{"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"}}} for i in range(3)]
    result = {"request": "gpu", "driver": driver, "pool": "n1", "device": "gpu-0"}
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpus", "count": 1}}
    waiting = pod("dra-waiting", 7)
    waiting.data.object["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "mine"}]
    group = {
        "metadata": {"name": "g", "namespace": "default", "uid": "uid-g", "resourceVersion": "2"},
        "spec": {"minMember": 1, "queue": "default"},
    }
    await ingester.handle(
        [
            changed("PodGroup", group),
            changed(
                "DeviceClass",
                {
                    "metadata": {"name": "gpus", "uid": "u-c", "resourceVersion": "1"},
                    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
                },
            ),
            changed(
                "ResourceSlice",
                {
                    "metadata": {"name": "n1-gpus", "uid": "u-s", "resourceVersion": "2"},
                    "spec": {
                        "driver": driver,
                        "nodeName": "n1",
                        "pool": {"name": "n1"},
                        "devices": slice_devices,
                    },
                },
            ),
            changed(
                "ResourceClaim",
                {
                    "metadata": {
                        "name": "held",
                        "namespace": "default",
                        "uid": "u-h",
                        "resourceVersion": "3",
                    },
                    "spec": {"devices": {"requests": [request]}},
                    "status": {"allocation": {"devices": {"results": [result]}}},
                },
            ),
            changed(
                "ResourceClaim",
                {
                    "metadata": {
                        "name": "mine",
                        "namespace": "default",
                        "uid": "u-m",
                        "resourceVersion": "4",
                    },
                    "spec": {"devices": {"requests": [request]}},
                },
            ),
            waiting,
        ]
    )
    async with sessions() as session, session.begin():
        session.add(
            tables.Decision(
                epoch=1,
                cycle=1,
                kind="bind",
                gang_uid="g",
                pod_uid="uid-other",
                node="n1",
                devices=[{"claim": "c", "request": "gpu", "driver": driver, "pool": "n1", "device": "gpu-1"}],
            )
        )
    async with sessions() as session, session.begin():
        read = await read_snapshot(session, now=datetime.now(UTC), expire_before=None, memory=ShellMemory())
    assert read.snapshot.devices_taken == {(driver, "n1", "gpu-0"), (driver, "n1", "gpu-1")}
    (need,) = next(t for g in read.snapshot.gangs for t in g.tasks if t.name == "dra-waiting").device_claims
    assert need.requests[0].candidates == {"n1": tuple((driver, "n1", f"gpu-{i}") for i in range(3))}


async def test_hypernodes_and_a_podgroups_network_topology_reach_the_snapshot(engine: AsyncEngine) -> None:
    """A HyperNode's members and a PodGroup's networkTopology and subGroupPolicy are kept as
    written and read back as the core's dataclasses; a deleted HyperNode leaves the snapshot."""

    def hypernode(name: str, version: int, tier: int, members: list[dict[str, Any]]) -> dict[str, Any]:
        meta = {"name": name, "uid": f"uid-{name}", "resourceVersion": str(version)}
        return {
            "kind": "HyperNode",
            "metadata": meta,
            "spec": {"tier": tier, "tierName": "leaf", "members": members},
        }

    leaf = hypernode("s0", 5, 1, [{"type": "Node", "selector": {"regexMatch": {"pattern": "^node[0-3]$"}}}])
    spine = hypernode("s2", 6, 2, [{"type": "HyperNode", "selector": {"exactMatch": {"name": "s0"}}}])
    group = {
        "kind": "PodGroup",
        "metadata": {"name": "nt", "namespace": "default", "uid": "uid-nt", "resourceVersion": "7"},
        "spec": {
            "minMember": 4,
            "networkTopology": {"mode": "hard", "highestTierAllowed": 2},
            "subGroupPolicy": [
                {
                    "name": "t0",
                    "subGroupSize": 4,
                    "networkTopology": {"mode": "soft", "highestTierName": "leaf"},
                }
            ],
        },
        "status": {"phase": "Inqueue"},
    }
    sessions = make_sessions(engine)
    ingester = Ingester(sessions, scheduler_names=["volcano"])
    memory = ShellMemory()
    await ingester.handle(
        [changed("HyperNode", leaf), changed("HyperNode", spine), changed("PodGroup", group)]
    )

    async def snapshot() -> Any:
        async with sessions() as session, session.begin():
            return (
                await read_snapshot(session, now=datetime.now(UTC), expire_before=None, memory=memory)
            ).snapshot

    read = await snapshot()
    assert [(h.name, h.tier, h.tier_name) for h in read.hyper_nodes] == [("s0", 1, "leaf"), ("s2", 2, "leaf")]
    assert read.hyper_nodes[0].members[0].regex == "^node[0-3]$"
    assert read.hyper_nodes[1].members[0].type == "HyperNode"
    assert read.hyper_nodes[1].members[0].exact == "s0"
    (gang,) = read.gangs
    assert gang.network_topology is not None
    assert (gang.network_topology.mode, gang.network_topology.highest_tier) == ("hard", 2)
    (sub_group,) = gang.sub_groups
    assert (sub_group.name, sub_group.size) == ("t0", 4)
    assert sub_group.topology is not None
    assert (sub_group.topology.mode, sub_group.topology.highest_tier_name) == ("soft", "leaf")

    gone = {**spine, "metadata": {**spine["metadata"], "resourceVersion": "8"}}
    await ingester.handle([changed("HyperNode", gone, "DELETED")])
    assert [h.name for h in (await snapshot()).hyper_nodes] == ["s0"]
