"""fairshare through the real stack: the queue that used the cluster earlier yields when both wait,
and the leader keeps each queue's usage in PostgreSQL.

One 4-cpu node; every pod asks for 3.5 cpus, so one runs at a time. `early` (queue fs-a, 20 s)
runs alone; `late-a` (fs-a) and then `late-b` (fs-b) are submitted while it runs. Without the
plugin late-a would go next (queues by name, jobs by age); with it fs-b, which has used nothing,
goes first. Meanwhile fs-a's decayed usage is in the `queue_usage` table, which a new leader reads
back. The simulator's kubelets end each pod after its `simulator.phalanx/run-seconds`.

With `deservedByUsage` the usage also shapes proportion's deserved share: `wide-a` (queue ds-a,
four pods of 0.9 cpu) holds the node alone for a while, then `wide-b` (ds-b, the same) arrives.
Proportion alone would give each queue 2 of the 4 CPUs, too few for wide-b's gang of three pods;
`phalanx queue why` shows ds-a, having used more, deserving less than 2 and ds-b more, and reclaim
takes three pods from ds-a so that wide-b's gang runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import create_async_engine

from phalanx import stack as stacks
from phalanx.scenario import ExternalStack
from phalanx.scenario.kube import Kube
from phalanx.scenario.model import ClusterSpec
from shared.domain.resources import Resources
from shared.storage import tables
from tests.e2e.test_reservation_backfill import job, pods_of, started_at
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: fairshare, arguments: {halfLife: 1h}}, {name: drf}, {name: predicates}]
"""


def one_pod_job(name: str, queue: str, seconds: int) -> dict[str, Any]:
    """A one-pod Volcano Job asking for 3.5 cpus that runs `seconds`, in `queue`."""
    manifest = job(name, 1, seconds)
    manifest["spec"]["queue"] = queue
    return manifest


async def stored_usage(database_url: str) -> dict[str, dict[str, float]]:
    row = tables.QueueUsageRow
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            rows = await connection.execute(select(row.queue, row.usage))
            return {queue: usage for queue, usage in rows}
    finally:
        await engine.dispose()


SHAPED_CONF = """
actions: "enqueue, allocate, reclaim"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins:
  - {name: fairshare, arguments: {halfLife: 1h, deservedByUsage: true}}
  - {name: drf}
  - {name: predicates}
  - {name: proportion}
"""


def wide_job(name: str, queue: str, minimum: int) -> dict[str, Any]:
    """Four pods of 0.9 cpu running an hour, a gang of `minimum` of them (minAvailable)."""
    manifest = job(name, 4, 3600)
    manifest["spec"]["queue"] = queue
    manifest["spec"]["minAvailable"] = minimum
    container = manifest["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    container["resources"]["requests"]["cpu"] = "900m"
    return manifest


def running_pods(kube: Kube, name: str) -> int:
    return sum(
        1
        for p in pods_of(kube, name)
        if (p.get("status") or {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    )


def deserved_cpu(stack: stacks.Stack, queue: str) -> int | None:
    """The queue's deserved CPUs (milli) as `phalanx queue why` shows them, or None if none yet."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "phalanx.cli",
            "queue",
            "why",
            queue,
            "-o",
            "json",
            "--state-dir",
            stack.state_dir,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "KUBECONFIG": stack.kubeconfig},
    )
    assert done.returncode == 0, done.stderr
    deserved = json.loads(done.stdout).get("deserved") or {}
    return Resources.parse({"cpu": deserved["cpu"]}).get("cpu") if "cpu" in deserved else None


def shaped_split(stack: stacks.Stack) -> tuple[int, int] | None:
    a, b = deserved_cpu(stack, "ds-a"), deserved_cpu(stack, "ds-b")
    return (a, b) if a is not None and b is not None and a + b > 3500 else None


@pytest.mark.timeout(400)  # half a minute or so of usage first
def test_the_queue_that_used_more_deserves_less_and_gives_back(stack: stacks.Stack) -> None:
    external = ExternalStack(Path(stack.state_dir))
    cluster = ClusterSpec.model_validate(
        {
            "nodes": [{"namePrefix": "ds-", "count": 1, "cpu": "4", "memory": "8Gi"}],
            "queues": [{"name": "ds-a", "reclaimable": True}, {"name": "ds-b", "reclaimable": True}],
        }
    )
    external.reset(cluster, SHAPED_CONF)
    kube = Kube(Path(stack.kubeconfig), stack.simulator_url)
    try:
        kube.apply(wide_job("wide-a", "ds-a", 1))
        eventually(lambda: running_pods(kube, "wide-a") == 4 or None, "wide-a holds the node")
        # ds-a's usage over time, kept by the leader, is what makes it deserve less once ds-b comes
        eventually(
            lambda: asyncio.run(stored_usage(stack.database_url)).get("ds-a", {}).get("cpu", 0) > 20 or None,
            "ds-a has used the node for a while",
            within=240,
        )
        kube.apply(wide_job("wide-b", "ds-b", 3))
        eventually(lambda: pods_of(kube, "wide-b") or None, "wide-b's pods exist")
        # Both ask for 3.6 of the 4 CPUs: proportion alone would give each 2; ds-a, which has used
        # the node while ds-b used nothing, deserves less of it now, ds-b more.
        a, b = eventually(lambda: shaped_split(stack), "both queues have a deserved share", within=120)
        assert a < 2000 < b, (a, b)
        # wide-b's gang needs 2.7 CPUs, more than proportion alone would let ds-b have (it would
        # wait); within its shaped share, reclaim takes three pods from ds-a for it.
        eventually(lambda: running_pods(kube, "wide-b") >= 3 or None, "ds-b reclaims from ds-a", within=180)
        assert running_pods(kube, "wide-a") <= 1
    finally:
        kube.close()


def test_the_queue_that_used_more_yields_first_and_its_usage_is_kept(stack: stacks.Stack) -> None:
    external = ExternalStack(Path(stack.state_dir))
    cluster = ClusterSpec.model_validate(
        {
            "nodes": [{"namePrefix": "fs-", "count": 1, "cpu": "4", "memory": "8Gi"}],
            "queues": [{"name": "fs-a"}, {"name": "fs-b"}],
        }
    )
    external.reset(cluster, CONF)
    kube = Kube(Path(stack.kubeconfig), stack.simulator_url)
    try:
        kube.apply(one_pod_job("early", "fs-a", 20))
        eventually(lambda: started_at(kube, "early", 1), "early runs")
        kube.apply(one_pod_job("late-a", "fs-a", 5))
        kube.apply(one_pod_job("late-b", "fs-b", 5))

        usage = eventually(
            lambda: asyncio.run(stored_usage(stack.database_url)).get("fs-a", {}).get("cpu"),
            "fs-a's usage kept in queue_usage",
            within=60,
        )
        assert usage > 0

        b_start = eventually(
            lambda: started_at(kube, "late-b", 1), "late-b starts when early ends", within=120
        )
        a_start = eventually(lambda: started_at(kube, "late-a", 1), "late-a starts after late-b", within=120)
        assert a_start >= b_start, (a_start, b_start)
    finally:
        kube.close()
