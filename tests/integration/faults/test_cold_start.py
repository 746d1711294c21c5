"""reliability.md §6.1 T7: a scheduler cold-starts on a large existing cluster, on real PostgreSQL
and NATS (volcano#5174's shape: a scheduler that allocates before its cache is loaded books
nodes that are already full).

The cluster stream holds, as the watcher publishes it: nodes full of bound pods (40 of one CPU
each, their running gangs) and one spare node with room for four pods, then two waiting gangs of
two pods, then the bound pods last. A scheduler process starts from empty tables and ingests
them all. It must not cycle before ingest has caught up: had it, the full nodes would look
empty and it would place the waiting pods there. Every bind goes to the spare node, no pod
already bound gets a decision, and every pod is in the tables.

Ingest is slowed as a lagging watch would make it (failpoint `sched.after_ingest_batch`: a second
after each batch of up to 500 events), so a scheduler that did not wait would cycle on a part of
the state. The size is `PHALANX_T7_PODS` bound pods (default 1,000 here; the plan's 2,000 recorded in
benchmarks/results/chaos.md).
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from services.watcher import translate
from shared.bus.nats import NatsBus
from shared.failpoints import ENV
from shared.storage import tables
from tests.integration.faults.test_zombie_leader import wait_for_binds
from tests.integration.scheduler.test_leadership import _scheduler

pytestmark = pytest.mark.integration
BOUND_PODS = int(os.environ.get("PHALANX_T7_PODS", "1000"))
PER_NODE = 40
GROUP = "scheduling.k8s.io/group-name"


def meta(name: str, version: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "uid": f"uid-{name}", "resourceVersion": str(version), **extra}


def node(name: str, cpu: int, version: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta(name, version, labels={"kubernetes.io/hostname": name}),
        "spec": {},
        "status": {
            "allocatable": {"cpu": str(cpu), "memory": "512Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def podgroup(name: str, members: int, phase: str, version: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": meta(name, version, namespace="default", creationTimestamp="2026-01-01T00:00:00Z"),
        "spec": {"minMember": members, "queue": "default"},
        "status": {"phase": phase},
    }


def pod(name: str, group: str, version: int, *, node_name: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "containers": [
            {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
        ],
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta(
            name,
            version,
            namespace="default",
            annotations={GROUP: group},
            creationTimestamp="2026-01-01T00:00:00Z",
        ),
        "spec": spec,
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def cluster() -> list[tuple[str, dict[str, Any]]]:
    """(kind, object) in the order the watcher would publish them: the bound pods last."""
    nodes = BOUND_PODS // PER_NODE
    version = iter(range(1, 10**7))
    objects: list[tuple[str, dict[str, Any]]] = [
        ("Node", node(f"full-{i}", PER_NODE, next(version))) for i in range(nodes)
    ]
    objects.append(("Node", node("spare", 4, next(version))))
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": meta("default", next(version)),
        "spec": {"weight": 1, "reclaimable": True},
        "status": {"state": "Open"},
    }
    objects.append(("Queue", queue))
    for w in range(2):
        objects.append(("PodGroup", podgroup(f"waiting-{w}", 2, "Inqueue", next(version))))
        objects += [
            ("Pod", pod(f"waiting-{w}-{j}", f"waiting-{w}", next(version), node_name=None)) for j in range(2)
        ]
    for i in range(nodes):
        objects.append(("PodGroup", podgroup(f"running-{i}", PER_NODE, "Running", next(version))))
    for i in range(nodes):
        objects += [
            ("Pod", pod(f"running-{i}-{j}", f"running-{i}", next(version), node_name=f"full-{i}"))
            for j in range(PER_NODE)
        ]
    return objects


async def publish(bus: NatsBus, objects: list[tuple[str, dict[str, Any]]]) -> None:
    batch = []
    for kind, obj in objects:
        message = translate.to_message(kind, "ADDED", translate.view_of(kind, obj), max_bytes=1 << 20)
        batch.append((message.subject, message.payload, message.event_id))
    await bus.publish_many(batch)


async def bind_decisions(engine: AsyncEngine) -> list[tuple[str, str]]:
    async with engine.connect() as connection:
        rows = await connection.execute(
            select(tables.Decision.pod_uid, tables.Decision.node).where(tables.Decision.kind == "bind")
        )
        return sorted((str(uid), str(node)) for uid, node in rows)


@pytest.mark.timeout(300)
async def test_a_cold_start_on_a_large_cluster_places_nothing_before_the_state_is_loaded(
    engine: AsyncEngine, bus: NatsBus, database_url: str, nats_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, "sched.after_ingest_batch=sleep(1)")
    objects = cluster()
    await publish(bus, objects)
    started = time.monotonic()
    scheduler = _scheduler(database_url, nats_url, "cold", ingest=True)
    try:
        await wait_for_binds(engine, 4, within=240)
        first_bind = time.monotonic() - started
        async with engine.connect() as connection:
            ingested = (await connection.execute(select(func.count()).select_from(tables.Pod))).scalar_one()
    finally:
        scheduler.kill()
        scheduler.wait()
    print(
        f"{BOUND_PODS} bound pods on {BOUND_PODS // PER_NODE} nodes: "
        f"first bind {first_bind:.1f} s after start"
    )
    assert await bind_decisions(engine) == [
        (f"uid-waiting-{w}-{j}", "spare") for w in range(2) for j in range(2)
    ], "every bind onto the one node with room; none for a pod already bound"
    assert ingested == BOUND_PODS + 4, "every pod in the tables"
