"""Kill -9 each service in turn while gangs are being scheduled; nothing is lost or done twice.

A watcher polls the cluster throughout: a gang may be seen partly bound for the moment its binds
are in flight, but never left so. At the end every job has Completed, and every pod was placed on
exactly one node (the scheduler's decisions and the pods agree).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest
from kubernetes import client, config
from sqlalchemy import select
from sqlalchemy.ext.asyncio import create_async_engine

from phalanx import stack as stacks
from phalanx.scenario import ExternalStack
from phalanx.scenario.model import ClusterSpec
from shared.storage import tables

pytestmark = pytest.mark.e2e
GANG = 4
PARTIAL_GRACE_SECONDS = 5.0


def job(name: str) -> dict[str, object]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "minAvailable": GANG,
            "schedulerName": "volcano",
            "tasks": [
                {
                    "name": "worker",
                    "replicas": GANG,
                    "template": {
                        "metadata": {"annotations": {"simulator.phalanx/run-seconds": "3"}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "w",
                                    "image": "busybox",
                                    "resources": {"requests": {"cpu": "2", "memory": "1Gi"}},
                                }
                            ],
                        },
                    },
                }
            ],
        },
    }


class PartialGangWatch(threading.Thread):
    """Polls pods; records any job seen partly bound for longer than the grace period."""

    def __init__(self, core: client.CoreV1Api) -> None:
        super().__init__(daemon=True)
        self.core = core
        self.stop = threading.Event()
        self.since: dict[str, float] = {}
        self.violations: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            bound: dict[str, int] = defaultdict(int)
            for pod in self.core.list_namespaced_pod("default").items:
                name = (pod.metadata.labels or {}).get("volcano.sh/job-name")
                if name and pod.spec.node_name:
                    bound[name] += 1
            now = time.monotonic()
            for name, count in bound.items():
                if 0 < count < GANG:
                    first = self.since.setdefault(name, now)
                    if now - first > PARTIAL_GRACE_SECONDS:
                        self.violations.append(f"{name}: {count}/{GANG} bound for {now - first:.1f} s")
                else:
                    self.since.pop(name, None)
            time.sleep(0.1)


def test_killing_each_service_loses_nothing_and_binds_nothing_twice(stack: stacks.Stack) -> None:
    ExternalStack(Path(stack.state_dir)).reset(
        ClusterSpec.model_validate(
            {"nodes": [{"namePrefix": "node-", "count": 4, "cpu": "8", "memory": "32Gi"}]}
        ),
        None,
    )
    api = config.new_client_from_config(stack.kubeconfig)
    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    watch = PartialGangWatch(core)
    watch.start()
    names: list[str] = []
    try:
        for round_, service in enumerate(("scheduler", "controller", "watcher", "admission")):
            for i in range(3):
                name = f"chaos-{round_}-{i}"
                custom.create_namespaced_custom_object(
                    "batch.volcano.sh", "v1alpha1", "default", "jobs", job(name)
                )
                names.append(name)
            time.sleep(0.3)
            stacks.restart(stack, service)
        deadline = time.monotonic() + 120
        phases: dict[str, str] = {}
        while time.monotonic() < deadline:
            phases = {
                j["metadata"]["name"]: ((j.get("status") or {}).get("state") or {}).get("phase", "")
                for j in custom.list_namespaced_custom_object(
                    "batch.volcano.sh", "v1alpha1", "default", "jobs"
                )["items"]
            }
            if all(phases.get(n) == "Completed" for n in names):
                break
            time.sleep(0.5)
    finally:
        watch.stop.set()
        watch.join()
    assert {n: phases.get(n) for n in names} == dict.fromkeys(names, "Completed")
    assert watch.violations == []

    pods = {
        p.metadata.uid: p.spec.node_name
        for p in core.list_namespaced_pod("default").items
        if (p.metadata.labels or {}).get("volcano.sh/job-name", "").startswith("chaos-")
    }
    assert len(pods) == GANG * len(names), "no pod was created twice"
    decided = asyncio.run(_bind_decisions(stack.database_url))
    for uid, node in pods.items():
        assert decided.get(uid) == {node}, f"pod {uid} on {node}, decided {decided.get(uid)}"


async def _bind_decisions(url: str) -> dict[str, set[str]]:
    engine = create_async_engine(url)
    async with engine.connect() as connection:
        rows = (
            await connection.execute(
                select(tables.Decision.pod_uid, tables.Decision.node).where(tables.Decision.kind == "bind")
            )
        ).all()
    await engine.dispose()
    nodes: dict[str, set[str]] = defaultdict(set)
    for uid, node in rows:
        nodes[uid].add(node)
    return nodes
