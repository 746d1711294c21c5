"""Benchmark: what a pod costs over its whole life, and what the system costs doing nothing.

    python -m benchmarks.lifecycle_cost [--jobs 40] [--pods 10] [--nodes 100] [--write FILE]

`phalanx bench` stops counting when the last pod is bound; a cluster that runs a million pods a
day also pays for each pod starting, running, finishing, and its Job completing (the watcher's
events, the controller's status writes, the scheduler releasing the resources). This runs the
whole stack (`phalanx up`, every service one process) against the simulator, first idle for
`--idle` seconds (the standing cost per service at that node count), then submits `--jobs`
Volcano Jobs of `--pods` pods (1 CPU, running 2 s) at once and waits until every Job is
Completed. Per process: CPU seconds; for the system: Kubernetes API writes, JetStream messages
stored, PostgreSQL transactions and rows written; each per pod, and net of the idle cost over the
same wall time. docs/scaling.md's capacity model is built from these and `phalanx bench`'s figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

from phalanx import stack as stacks
from phalanx.bench import probes
from phalanx.chaos.plan import GangSubmission
from phalanx.scenario.kube import Kube
from shared.infra import local

RUN_SECONDS = 2


@dataclass(frozen=True)
class Reading:
    cpu: dict[str, float]
    messages: int
    transactions: int
    rows: int
    api_writes: int
    at: float


def _read(stack: stacks.Stack, kube: Kube, pids: dict[str, int]) -> Reading:
    cpu = probes.cpu_by_name(pids)
    messages = sum(asyncio.run(probes.jetstream_messages(stack.nats_url)).values())
    postgres = asyncio.run(probes.postgres_counters(stack.database_url))
    writes = kube.control("/simulator/v1/audit", method="GET")["writes"]
    return Reading(
        cpu, messages, postgres.transactions, postgres.rows_written, sum(writes.values()), time.monotonic()
    )


def _all_completed(kube: Kube, names: list[str]) -> bool:
    phases = {
        job["metadata"]["name"]: ((job.get("status") or {}).get("state") or {}).get("phase")
        for job in kube.list_objects("Job", "default")
    }
    return all(phases.get(name) == "Completed" for name in names)


def measure(jobs: int, pods: int, nodes: int, idle_s: float, folder: Path) -> str:
    nodes_file = folder / "nodes.yaml"
    nodes_file.write_text(
        yaml.safe_dump([{"namePrefix": "node-", "count": nodes, "cpu": "32", "memory": "256Gi"}])
    )
    stack = stacks.up(folder / "stack", nodes_file=nodes_file, durable_postgres=False)
    try:
        kube = Kube(Path(stack.kubeconfig), stack.simulator_url)
        pids = {p.name: p.pid for p in stack.processes}
        pids |= {s.name: s.pid for s in local.load(Path(stack.state_dir))}
        time.sleep(5)  # the services' start-up work is not the standing cost
        kube.control("/simulator/v1/audit", method="DELETE")
        quiet = _read(stack, kube, pids)
        time.sleep(idle_s)
        before = _read(stack, kube, pids)
        names = [f"life-{index:04d}" for index in range(jobs)]
        for name in names:
            kube.create(GangSubmission(0, name, pods, "1", RUN_SECONDS).manifest())
        deadline = time.monotonic() + 900
        while not _all_completed(kube, names):
            if time.monotonic() > deadline:
                raise RuntimeError("the Jobs did not all complete within 900 s")
            time.sleep(0.5)
        time.sleep(1.5)  # PostgreSQL backends flush their statistics about once a second
        after = _read(stack, kube, pids)
        kube.close()
    finally:
        stacks.down(folder / "stack")
    return render(jobs, pods, nodes, quiet, before, after)


def render(jobs: int, pods: int, nodes: int, quiet: Reading, before: Reading, after: Reading) -> str:
    total_pods = jobs * pods
    idle_wall, busy_wall = before.at - quiet.at, after.at - before.at
    rows = []
    for name in before.cpu:
        idle_rate = (before.cpu[name] - quiet.cpu[name]) / idle_wall
        used = after.cpu[name] - before.cpu[name]
        net = max(used - idle_rate * busy_wall, 0.0)
        rows.append(
            f"| {name} | {idle_rate * 1000:.1f} | {used:.2f} | {used / total_pods * 1000:.2f} | "
            f"{net / total_pods * 1000:.2f} |"
        )
    idle_total = sum((before.cpu[n] - quiet.cpu[n]) / idle_wall for n in before.cpu)
    used_total = sum(after.cpu[n] - before.cpu[n] for n in before.cpu)
    net_total = max(used_total - idle_total * busy_wall, 0.0)
    rows.append(
        f"| all | {idle_total * 1000:.1f} | {used_total:.2f} | {used_total / total_pods * 1000:.2f} | "
        f"{net_total / total_pods * 1000:.2f} |"
    )

    def per(field: str) -> str:
        busy = getattr(after, field) - getattr(before, field)
        idle = (getattr(before, field) - getattr(quiet, field)) / idle_wall
        return f"{busy} | {busy / total_pods:.2f} | {idle:.2f}"

    when = (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {os.cpu_count()} CPUs; "
        f"Python {platform.python_version()} on {platform.system()} {platform.release()}; "
        f"the machine's 1-minute load average at the end: {os.getloadavg()[0]:.2f} (shared with other work)"
    )
    command = f"python -m benchmarks.lifecycle_cost --jobs {jobs} --pods {pods} --nodes {nodes}"
    return "\n".join(
        [
            "# A pod's whole life: cost per pod from creation to its Job Completed, and the idle cost",
            "",
            f"`{command}` (benchmarks/lifecycle_cost.py)",
            "",
            when + ".",
            "",
            f"`phalanx up` (one process per service) on {nodes} simulated nodes of 32 CPU; idle for "
            f"{idle_wall:.0f} s, then {jobs} Volcano Jobs of {pods} pods (1 CPU each, running "
            f"{RUN_SECONDS} s) submitted at once; measured until every Job was Completed "
            f"({busy_wall:.1f} s). Net = used minus the idle rate over the same wall time.",
            "",
            "| process | idle CPU ms per second | CPU s used | CPU ms per pod | net CPU ms per pod |",
            "|---|---|---|---|---|",
            *rows,
            "",
            "| writes | over the run | per pod | per second while idle |",
            "|---|---|---|---|",
            f"| Kubernetes API writes | {per('api_writes')} |",
            f"| JetStream messages stored | {per('messages')} |",
            f"| PostgreSQL transactions | {per('transactions')} |",
            f"| PostgreSQL rows written | {per('rows')} |",
            "",
        ]
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--pods", type=int, default=10)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--idle", type=float, default=20.0)
    parser.add_argument("--write", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="phalanx-lifecycle-") as folder:
        text = measure(args.jobs, args.pods, args.nodes, args.idle, Path(folder))
    if args.write:
        args.write.write_text(text)
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])
