"""A scaled stack (three controllers, two watchers, two schedulers, three NATS servers) loses one
controller replica, the watcher publishing pods, the leading scheduler and the NATS server leading
the CLUSTER stream at once, in the middle of a run of gangs.

The survivors must take over: the dead controller's shards move to the other two, the standby
watcher takes the Pod kind and resumes its watch where the dead one stood (no relist), and the
standby scheduler takes the lease. Then the dead controller is started again and gets its part
of the shards back from the others, which go on running.

Every job must still complete, and the chaos oracle, reading the simulated API server's own
trace, must find no pod bound twice, no pod created or Scheduled twice, no node over-committed
and no gang left partially bound; each job must have exactly one PodGroup and one Service. The
hand-over and failover times are printed (recorded in benchmarks/results/scaling-failover.md).

It runs a stack of its own, for the file: the package's shared one runs one replica of each.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import yaml

from phalanx import stack as stacks
from phalanx.chaos import faults, invariants, oracle, plan
from phalanx.scenario.kube import Kube, KubeError
from shared.domain.resources import Resources
from tests.waiting import eventually

pytestmark = pytest.mark.e2e
SCALE = {"controller": 3, "watcher": 2, "scheduler": 2, "nats": 3}
NODES = [{"namePrefix": "scaled-node-", "count": 6, "cpu": "8", "memory": "32Gi"}]
SEED, RUN_S, GANGS, KILL_AT_S = 22, 40.0, 16, 12.0


@pytest.fixture(scope="module")
def scaled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[stacks.Stack]:
    state_dir = tmp_path_factory.mktemp("scaled")
    saved = {k: os.environ.pop(k) for k in ("PHALANX_NATS_URL", "PHALANX_DATABASE_URL") if k in os.environ}
    nodes = state_dir / "nodes.yaml"
    nodes.write_text(yaml.safe_dump(NODES))
    try:
        yield stacks.up(state_dir, nodes_file=nodes, durable_postgres=False, scale=SCALE)
    finally:
        stacks.down(state_dir)
        os.environ.update(saved)


def _rows(stack: stacks.Stack, query: str) -> list[asyncpg.Record]:
    async def fetch() -> list[asyncpg.Record]:
        connection = await asyncpg.connect(stack.database_url.replace("+asyncpg", ""))
        try:
            return list(await connection.fetch(query))
        finally:
            await connection.close()

    return asyncio.run(fetch())


def _replica(stack: stacks.Stack, service: str, holder: str) -> stacks.Process:
    """The process whose lease identity is `holder` ('<host>/<service>-<replica number>')."""
    number = holder.rsplit("-", 1)[1]
    return next(p for p in stack.replicas(service) if p.env[f"{service.upper()}_REPLICA"] == number)


def _with_svc_plugin(manifest: dict[str, Any]) -> dict[str, Any]:
    manifest["spec"]["plugins"] = {"svc": [], "env": []}
    return manifest


def _submit_all(kube: Kube, submissions: list[plan.GangSubmission], started: float) -> None:
    for submission in submissions:
        time.sleep(max(0.0, started + submission.at - time.monotonic()))
        deadline = time.monotonic() + 60
        while True:  # a create refused while a replica was dying is retried, as a client would
            try:
                kube.create(_with_svc_plugin(submission.manifest()))
                break
            except KubeError as error:
                if error.conflict:
                    break
                if time.monotonic() > deadline:
                    raise
                time.sleep(1.0)


def _relists_of(process: stacks.Process, kind: str, *, reason: str | None = None) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{process.health_port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("phalanx_watcher_relists_total{")
        and f'kind="{kind}"' in line
        and (reason is None or f'reason="{reason}"' in line)
    )


def _job_phases(kube: Kube) -> dict[str, str]:
    return {
        f"{job['metadata']['namespace']}/{job['metadata']['name']}": (
            ((job.get("status") or {}).get("state") or {}).get("phase") or ""
        )
        for job in kube.list_objects("Job", plan.NAMESPACE)
    }


@pytest.mark.timeout(900)
def test_killing_a_controller_the_active_watcher_and_the_leader_loses_and_duplicates_nothing(
    scaled: stacks.Stack, tmp_path: Path
) -> None:
    stack = scaled
    # The replicas share the shards out among themselves: each holds its fair part (16 / 3).
    eventually(
        lambda: sorted(_shards_per_holder(stack).values()) == [5, 5, 6],
        "every controller replica holds its part of the shards",
        within=60,
        every=0.5,
    )
    kube = Kube(Path(stack.kubeconfig), stack.simulator_url)
    # From here on the API server's own history tells every PodGroup and Service created.
    since = {kind: kube.list_with_version(kind)[1] for kind in ("PodGroup", "Service")}
    kube.create(plan.capped_queue())
    submissions = plan.gangs(SEED, RUN_S, GANGS)
    started = time.monotonic()
    submitter = threading.Thread(
        target=_submit_all,
        args=(Kube(Path(stack.kubeconfig), stack.simulator_url), submissions, started),
        daemon=True,
    )
    submitter.start()

    # Who does what now: the shards of replica 1, the Pod kind's watcher, the leader.
    controller = stack.replicas("controller")[1]  # the second replica: its number is 1
    holder_of = {str(r["holder"]) for r in _rows(stack, "SELECT holder FROM controller_shards")}
    victim_holder = next(h for h in holder_of if h.endswith("/controller-1"))
    its_shards = {
        int(r["shard"])
        for r in _rows(stack, f"SELECT shard FROM controller_shards WHERE holder = '{victim_holder}'")
    }
    assert its_shards, "replica 1 holds shards of its own"
    (pods,) = _rows(stack, "SELECT holder, epoch FROM watcher_leases WHERE kind = 'Pod'")
    watcher = _replica(stack, "watcher", str(pods["holder"]))
    (leader,) = _rows(stack, "SELECT holder, epoch FROM scheduler_leader")
    scheduler = next(p for p in stack.replicas("scheduler") if str(leader["holder"]).endswith(f"-{p.pid}"))

    time.sleep(max(0.0, started + KILL_AT_S - time.monotonic()))
    killed_at = time.monotonic()
    for process in (controller, watcher, scheduler):
        stacks.stop_process(process, sig=signal.SIGKILL)
    stopped_nats = faults.stop(stack, "nats-leader")  # the server leading the CLUSTER stream
    assert "left stopped" in stopped_nats, stopped_nats
    took: dict[str, float] = {}

    def taken_over() -> bool:
        now = time.monotonic() - killed_at
        if "controller shards" not in took:
            moved = _rows(
                stack,
                "SELECT count(*) AS n FROM controller_shards "
                f"WHERE holder <> '{victim_holder}' AND expires_at > now()",
            )
            if int(moved[0]["n"]) == len(_all_shards(stack)):
                took["controller shards"] = now
        if "watcher Pod kind" not in took:
            (row,) = _rows(stack, "SELECT holder, epoch FROM watcher_leases WHERE kind = 'Pod'")
            if row["epoch"] > pods["epoch"]:
                took["watcher Pod kind"] = now
        if "scheduler leadership" not in took:
            (row,) = _rows(stack, "SELECT holder, epoch FROM scheduler_leader")
            if row["epoch"] > leader["epoch"]:
                took["scheduler leadership"] = now
        return len(took) == 3

    eventually(taken_over, "the survivors took every lease over", within=120, every=0.2)

    # The dead controller comes back while gangs still arrive: it gets its part again, and the
    # others give it up without restarting (their pids do not change).
    others = {p.name: p.pid for p in stack.replicas("controller") if p.name != controller.name}
    rejoined_at = time.monotonic()
    stacks.restart(stack, controller.name, kill=False)
    eventually(
        lambda: sorted(_shards_per_holder(stack).values()) == [5, 5, 6],
        "the rejoined replica holds its part of the shards again",
        within=60,
        every=0.2,
    )
    took["controller rejoined, shards shared out again"] = time.monotonic() - rejoined_at
    assert {p.name: p.pid for p in stack.replicas("controller") if p.name != controller.name} == others
    submitter.join()

    # The standby watcher resumed the Pod watch where the dead one stood: it took the kind over
    # without listing pods. (A later relist for an error is the designed repair: the NATS server
    # killed with it may lose an ack of what the resumed watch published, and the watch relists
    # rather than move past an event it cannot prove was stored; watching.py.)
    (row,) = _rows(stack, "SELECT holder FROM watcher_leases WHERE kind = 'Pod'")
    standby = _replica(stack, "watcher", str(row["holder"]))
    assert standby.name != watcher.name
    assert _relists_of(standby, "Pod", reason="start") == 0
    resumed = [
        line
        for line in Path(standby.log_path).read_text().splitlines()
        if "resuming a taken-over watch" in line
    ]
    assert any('"Pod"' in line for line in resumed), resumed

    submitted = [f"{plan.NAMESPACE}/{s.name}" for s in submissions]
    eventually(
        lambda: all(_job_phases(kube).get(job) in oracle.TERMINAL_JOB_PHASES for job in submitted),
        "every job finished",
        within=300,
        every=2.0,
    )
    allocatable = {
        node["metadata"]["name"]: dict(Resources.parse(node["status"]["allocatable"]))
        for node in kube.list_objects("Node")
    }
    verdict = invariants.judge(
        kube.control("/simulator/v1/audit/trace", method="GET"),
        allocatable=allocatable,
        capability={
            queue["metadata"]["name"]: dict(Resources.parse(queue["spec"]["capability"]))
            for queue in kube.list_objects("Queue")
            if (queue.get("spec") or {}).get("capability")
        },
        scheduled_events=_scheduled_events(kube),
        submitted=submitted,
        job_phases=_job_phases(kube),
        quiescent=True,
    )
    print(f"hand-over and failover after SIGKILL (s): {took}")
    print(f"oracle figures: {verdict.figures}")
    assert verdict.violations == []
    assert verdict.figures["jobs by phase"] == {"Completed": GANGS}
    assert verdict.figures["binds"] == sum(s.replicas for s in submissions)
    assert verdict.figures["pods recreated under the same name"] == 0

    # `phalanx status` shows each replica on its own line: the killed ones gone, the rest ready.
    shown = subprocess.run(
        [sys.executable, "-m", "phalanx.cli", "status", "--state-dir", stack.state_dir],
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = {line.split()[0]: line for line in shown.stdout.splitlines() if " pid " in line}
    assert set(lines) == {p.name for p in stack.processes}
    for process in stack.processes:
        if process.name in (watcher.name, scheduler.name):
            expected = "gone"
        else:
            expected = "running" if process.name == "simulator" else "ready"
        assert f" {expected} " in lines[process.name], lines[process.name]

    # Each job's PodGroup and Service were created once, by one replica, dead or alive.
    names = {job["metadata"]["name"] for job in kube.list_objects("Job", plan.NAMESPACE)}
    for kind, version in since.items():
        assert _created_per_job(kube, kind, version) == dict.fromkeys(names, 1), kind


def _shards_per_holder(stack: stacks.Stack) -> dict[str, int]:
    rows = _rows(
        stack, "SELECT holder, count(*) AS n FROM controller_shards WHERE expires_at > now() GROUP BY holder"
    )
    return {str(r["holder"]): int(r["n"]) for r in rows}


def _created_per_job(kube: Kube, kind: str, since: str) -> dict[str, int]:
    """How many objects of `kind` the API server added for each Job since `since`."""
    created: Counter[str] = Counter()
    for change, obj in kube.watch(kind, since, timeout=2):
        for ref in obj["metadata"].get("ownerReferences") or ():
            if change == "ADDED" and ref.get("kind") == "Job":
                created[ref["name"]] += 1
    return dict(created)


def _all_shards(stack: stacks.Stack) -> list[int]:
    return [int(r["shard"]) for r in _rows(stack, "SELECT shard FROM controller_shards")]


def _scheduled_events(kube: Kube) -> dict[str, int]:
    counts: dict[str, int] = {}
    for event in kube.list_objects("Event", plan.NAMESPACE):
        uid = (event.get("involvedObject") or {}).get("uid")
        if event.get("reason") == "Scheduled" and uid:
            counts[uid] = counts.get(uid, 0) + int(event.get("count") or 1)
    return counts
