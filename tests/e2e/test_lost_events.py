"""reliability.md §6 T6, T9 and T13 on the whole stack: events lost in a watch gap or with the bus,
and the level-triggered recovery that repairs them.

T6: the watcher is paused past its watch's server-side end while the cluster changes by more
than the API server keeps (nodes deleted with their pods, a job and a queue deleted, new ones
made, foreign pods come and go), so its resume gets 410 Gone and it relists. Then one check
(phalanx/chaos/views.py) diffs every table the scheduler projects from the cluster against the
simulator's objects, row by row and version by version, and finds them equal.

T9: NATS is SIGKILLed during a submit burst and restarted 10 s later on the same store: every job
completes, each pod is created once, the outboxes drain, and every job has one row.

T13: NATS loses its whole store (stopped, its directory deleted, started empty); the bootstrap
makes the streams again, as `phalanx up` and the chart's hook do. Running pods are left alone
(none evicted, deleted or made again), new jobs run, and the views equal the cluster again.

The file runs a stack of its own, because it kills NATS, and configures it so that a 410 can
be forced: the simulator keeps 100 watch events per kind, and the watcher's watches end after
10 s. Sizes: `PHALANX_T9_JOBS` (default 60 here; the plan's 200 recorded in
benchmarks/results/chaos.md) and `PHALANX_T13_JOBS` running jobs (default 12; the plan's 100
recorded there too).

On a scaled stack (PHALANX_TEST_SCALE, docs/scaling.md) the faults hit every replica of the part:
T6 pauses every watcher replica, T9 kills every NATS server of the cluster and T13 loses every
member's store, since losing one of several is what the scaled stack is built to ride over
(tests/e2e/test_scaled_failover.py) and would leave no gap to repair.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, select
from sqlalchemy.ext.asyncio import create_async_engine

from phalanx import stack as stacks
from phalanx.chaos import views
from phalanx.chaos.runner import create_retrying
from phalanx.scenario import ExternalStack
from phalanx.scenario.kube import Kube
from phalanx.scenario.model import ClusterSpec
from services.scheduler.row_tables import TABLE_OF_KIND
from shared.bus import bootstrap
from shared.config import NatsSettings
from shared.infra import local
from shared.storage import tables
from tests.e2e.conftest import up_own_stack
from tests.e2e.test_contention import allocatable, foreign_pod, job_phases, judged
from tests.e2e.test_restarts import job
from tests.waiting import eventually

pytestmark = pytest.mark.e2e
WATCH_TIMEOUT_S = 10
T9_JOBS = int(os.environ.get("PHALANX_T9_JOBS", "60"))
T13_JOBS = int(os.environ.get("PHALANX_T13_JOBS", "12"))


@pytest.fixture(scope="module")
def own_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[stacks.Stack]:
    names = ("PHALANX_NATS_URL", "PHALANX_DATABASE_URL", "WATCHER_WATCH_TIMEOUT_SECONDS")
    saved = {name: os.environ.pop(name) for name in names if name in os.environ}
    os.environ["WATCHER_WATCH_TIMEOUT_SECONDS"] = str(WATCH_TIMEOUT_S)  # servers of its own, too
    state_dir = tmp_path_factory.mktemp("lost-events")
    try:
        yield up_own_stack(state_dir, simulator_args=["--history-size", "100"])
    finally:
        stacks.down(state_dir)
        os.environ.pop("WATCHER_WATCH_TIMEOUT_SECONDS", None)
        os.environ.update(saved)


@pytest.fixture
def kube(own_stack: stacks.Stack) -> Iterator[Kube]:
    kube = Kube(Path(own_stack.kubeconfig), own_stack.simulator_url)
    yield kube
    kube.close()


def reset(stack: stacks.Stack, kube: Kube, cluster: dict[str, Any]) -> None:
    ExternalStack(Path(stack.state_dir)).reset(ClusterSpec.model_validate(cluster), None)
    kube.control("/simulator/v1/audit", method="DELETE")


def nodes_of(prefix: str, count: int, *, cpu: str = "8") -> dict[str, Any]:
    return {"nodes": [{"namePrefix": prefix, "count": count, "cpu": cpu, "memory": "64Gi"}]}


def forever(name: str, *, replicas: int = 2, **spec: object) -> dict[str, Any]:
    manifest = job(name, replicas=replicas, **spec)
    task = manifest["spec"]["tasks"][0]
    del task["template"]["metadata"]  # runs until the test ends it
    task["template"]["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1", "memory": "256Mi"}
    return manifest


def running(kube: Kube, names: list[str]) -> bool:
    phases = job_phases(kube)
    return all(phases.get(f"default/{name}") == "Running" for name in names)


def completed(kube: Kube, names: list[str], within: float) -> None:
    def all_completed() -> bool:
        phases = job_phases(kube)
        assert all(phases.get(f"default/{name}") == "Completed" for name in names), {
            name: phases.get(f"default/{name}")
            for name in names
            if phases.get(f"default/{name}") != "Completed"
        }
        return True

    eventually(all_completed, "every job Completed", within=within, every=1.0)


# -- the views ------------------------------------------------------------------------------------


async def table_view(database_url: str) -> views.View:
    """Every projected table's live rows: key -> resourceVersion."""
    engine = create_async_engine(database_url)
    view: views.View = {}
    try:
        async with engine.connect() as connection:
            for model in set(TABLE_OF_KIND.values()):
                key = inspect(model).primary_key[0]
                table = model.__table__
                rows = await connection.execute(
                    select(key, table.c.resource_version).where(table.c.deleted.is_(False))
                )
                view[str(model.__tablename__)] = {str(k): int(v) for k, v in rows}
    finally:
        await engine.dispose()
    return view


def cluster_view(kube: Kube) -> views.View:
    return views.expected({kind: kube.list_objects(kind) for kind in TABLE_OF_KIND}, ["volcano"])


def views_differ(stack: stacks.Stack, kube: Kube) -> list[str]:
    # The cluster is read first: a change made after it reaches the tables later, never earlier.
    cluster = cluster_view(kube)
    return views.diff(cluster, asyncio.run(table_view(stack.database_url)))


def views_agree(stack: stacks.Stack, kube: Kube, *, within: float = 120) -> None:
    def equal() -> bool:
        differences = views_differ(stack, kube)
        assert differences == [], differences[:20]
        return True

    eventually(equal, "the scheduler's tables equal to the cluster", within=within, every=1.0)


def relists(stack: stacks.Stack, kind: str, reason: str) -> float:
    """`phalanx_watcher_relists_total{kind, reason}` from the watchers' /metrics, summed over the
    replicas: on a scaled stack the kind's publisher may be either."""
    total = 0.0
    for watcher in stack.replicas("watcher"):
        url = f"http://127.0.0.1:{watcher.health_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            text = response.read().decode()
        pattern = rf'^phalanx_watcher_relists_total\{{kind="{kind}",reason="{reason}"\}} (\S+)$'
        match = re.search(pattern, text, re.MULTILINE)
        total += float(match.group(1)) if match else 0.0
    return total


# -- T6 --------------------------------------------------------------------------------------------


@pytest.mark.timeout(400)
def test_a_watcher_resuming_into_410_relists_and_every_table_equals_the_cluster(
    own_stack: stacks.Stack, kube: Kube
) -> None:
    reset(own_stack, kube, nodes_of("t6-node-", 5))
    kube.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "t6-gone"},
            "spec": {},
        }
    )
    names = [f"t6-{i}" for i in range(4)]
    for name in names:
        kube.create(forever(name))
    eventually(lambda: running(kube, names), "the jobs running", within=120, every=0.5)
    views_agree(own_stack, kube)
    expired = relists(own_stack, "Pod", "expired")

    # Every watcher replica is paused: a standby that took over would close the gap this makes.
    watchers = [process.pid for process in own_stack.replicas("watcher")]
    for watcher in watchers:
        os.killpg(watcher, signal.SIGSTOP)
    try:
        time.sleep(WATCH_TIMEOUT_S + 1)  # the server has ended the watch the watcher was on
        kube.control("/simulator/v1/nodes/t6-node-4", method="DELETE")  # with their pods
        kube.control("/simulator/v1/nodes/t6-node-3", method="DELETE")
        for i in range(40):
            kube.create(foreign_pod(f"t6-foreign-{i}"))
        kube.delete("Job", "default", "t6-0")
        kube.delete("Queue", None, "t6-gone")
        kube.create(forever("t6-new"))
        kube.create(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "t6-pc"},
                "value": 5,
            }
        )

        def foreign_done() -> bool:
            pods = [
                p
                for p in kube.list_objects("Pod", "default")
                if p["metadata"]["name"].startswith("t6-foreign-")
            ]
            return len(pods) == 40 and all((p.get("status") or {}).get("phase") == "Succeeded" for p in pods)

        eventually(foreign_done, "the foreign pods run and end (well over 100 pod events)", within=60)
    finally:
        for watcher in watchers:
            os.killpg(watcher, signal.SIGCONT)

    eventually(lambda: relists(own_stack, "Pod", "expired") > expired, "a relist after 410 Gone", within=60)
    eventually(lambda: running(kube, ["t6-new", *names[1:]]), "the jobs running again", within=180, every=1.0)
    views_agree(own_stack, kube)
    for name in ("t6-new", *names[1:]):
        kube.delete("Job", "default", name)
    kube.delete("PriorityClass", None, "t6-pc")


# -- T9 --------------------------------------------------------------------------------------------


def nats_servers(stack: stacks.Stack) -> list[local.LocalServer]:
    """The stack's NATS server, or every member of its cluster (`nats`, `nats-2`, ...): on a scaled
    stack the fault is the whole bus going away, as a lone server's death is."""
    servers = [s for s in local.load(Path(stack.state_dir)) if s.name.partition("-")[0] == "nats"]
    if not servers or "nats" not in stack.infra:
        pytest.skip("NATS comes from the environment: this test must kill its own")
    return servers


def start_nats_again(stack: stacks.Stack, old: list[local.LocalServer]) -> None:
    """Each server back on its port, from its own configuration (a member rejoins its cluster)."""
    state_dir = Path(stack.state_dir)
    fresh = {server.name: local.restart_nats(server) for server in old}
    local.save(state_dir, [fresh.get(s.name, s) for s in local.load(state_dir)])


def short_job(name: str) -> dict[str, Any]:
    manifest = job(name, replicas=1)
    manifest["spec"]["tasks"][0]["template"]["metadata"]["annotations"]["simulator.phalanx/run-seconds"] = "1"
    manifest["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"] = {
        "cpu": "500m",
        "memory": "256Mi",
    }
    return manifest


async def unsent(database_url: str) -> int:
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            total = 0
            for outbox in (tables.ControllerOutbox, tables.SchedulerOutbox):
                table = outbox.__table__
                rows = await connection.execute(select(table.c.id).where(table.c.published_at.is_(None)))
                total += len(rows.all())
            return total
    finally:
        await engine.dispose()


async def job_rows(database_url: str, prefix: str) -> list[str]:
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            table = tables.JobRecord.__table__
            rows = await connection.execute(select(table.c.name).where(table.c.name.startswith(prefix)))
            return sorted(str(name) for (name,) in rows)
    finally:
        await engine.dispose()


@pytest.mark.timeout(900)
def test_nats_killed_during_a_submit_burst_loses_and_doubles_nothing(
    own_stack: stacks.Stack, kube: Kube
) -> None:
    servers = nats_servers(own_stack)
    reset(own_stack, kube, nodes_of("t9-node-", 8, cpu="16"))
    nodes = allocatable(kube)
    names = [f"t9-{i}" for i in range(T9_JOBS)]
    kill_at = min(5.0, T9_JOBS / 20 / 2)  # the plan's 5 s into 200 jobs at 20/s: halfway

    def burst() -> None:
        started = time.monotonic()
        for index, name in enumerate(names):
            time.sleep(max(0.0, started + index / 20 - time.monotonic()))
            create_retrying(kube, short_job(name))

    submitting = threading.Thread(target=burst, daemon=True)
    started = time.monotonic()
    submitting.start()
    time.sleep(kill_at)
    for server in servers:
        os.kill(server.pid, signal.SIGKILL)
    killed_at = time.monotonic() - started
    time.sleep(10.0)
    start_nats_again(own_stack, servers)
    submitting.join(timeout=300)
    assert not submitting.is_alive(), "every job submitted"
    completed(kube, names, within=600)
    took = time.monotonic() - started
    print(
        f"{T9_JOBS} jobs, NATS killed {killed_at:.1f} s in and back 10 s later: all Completed in {took:.0f} s"
    )

    verdict = judged(kube, nodes, names)
    assert verdict.violations == [], "no pod created, bound or Scheduled twice; nothing over-committed"
    assert verdict.figures["binds"] == T9_JOBS
    eventually(lambda: asyncio.run(unsent(own_stack.database_url)) == 0, "both outboxes drained", within=120)
    assert asyncio.run(job_rows(own_stack.database_url, "t9-")) == sorted(names), "one row per job"


# -- T13 -------------------------------------------------------------------------------------------


@pytest.mark.timeout(600)
def test_a_lost_nats_store_is_rebuilt_and_the_stack_recovers_without_touching_running_pods(
    own_stack: stacks.Stack, kube: Kube
) -> None:
    servers = nats_servers(own_stack)
    reset(own_stack, kube, nodes_of("t13-node-", 4, cpu="32"))
    steady = [f"t13-run-{i}" for i in range(T13_JOBS)]
    for name in steady:
        kube.create(forever(name, replicas=1))
    eventually(lambda: running(kube, steady), "the steady jobs running", within=120, every=0.5)
    views_agree(own_stack, kube)

    def pods() -> dict[str, str]:
        return {
            p["metadata"]["name"]: p["metadata"]["uid"]
            for p in kube.list_objects("Pod", "default")
            if p["metadata"]["name"].startswith("t13-run-")
        }

    before = pods()
    writes_before = kube.control("/simulator/v1/audit", method="GET")["writes"]

    lost_at = time.monotonic()
    for server in servers:
        local.stop(server)
        shutil.rmtree(server.data_dir)
    start_nats_again(own_stack, servers)
    asyncio.run(bootstrap.create_streams(NatsSettings(url=own_stack.nats_url)))

    fresh = [f"t13-new-{i}" for i in range(4)]
    for name in fresh:
        create_retrying(kube, short_job(name))
    completed(kube, fresh, within=240)
    print(
        f"{T13_JOBS} running jobs; NATS store lost: new jobs Completed "
        f"{time.monotonic() - lost_at:.0f} s after the loss"
    )
    assert running(kube, steady), "the steady jobs kept running"
    assert pods() == before, "no running pod evicted, deleted or made again"
    writes = kube.control("/simulator/v1/audit", method="GET")["writes"]
    for verb in ("POST pods/eviction", "DELETE pods"):
        assert writes.get(verb, 0) == writes_before.get(verb, 0), f"no {verb} after the loss"
    views_agree(own_stack, kube)
