"""The scheduler's scaling table (issue #15): cycle time and memory at 1,000, 5,000 and 10,000
nodes with 1,000 to 50,000 pods, measured on a real PostgreSQL.

`python -m phalanx.bench.scaling [--out FILE]` starts an embedded PostgreSQL, and for each node
count fills the scheduler's tables through its own ingester (nodes of 32 CPU / 256Gi; pods of
100m / 128Mi in gangs of 10, bound and Running) up to each pod count. At each step it times the
scheduler's own cycle (`CycleLoop.run_once`: read, plan, fenced commit) three ways:

- a new leader's first cycle, which reads and builds every row;
- a cycle after nothing changed;
- a cycle after 10 new gangs of 10 pending pods arrived, which it places.

Memory is this process's resident set after the steps (the rows and objects the cycle holds,
plus the interpreter and libraries, about the scheduler's own baseline). No NATS, no controller,
no simulator: only what the cycle itself costs.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from phalanx.bench.runner import SCHEDULER_CONF
from services.scheduler.cycle_loop import CycleLoop
from services.scheduler.ingest import Ingester
from services.scheduler.leadership import Leadership
from services.scheduler.snapshot_reader import ShellMemory
from shared.clock import SystemClock
from shared.infra import provision
from shared.messages.cluster import ObjectChanged
from shared.messages.envelope import CloudEvent, new_event
from shared.storage import migrate, roles
from shared.storage.engine import make_sessions
from shared.volcano.keys import GROUP_NAME

NODE_COUNTS = (1_000, 5_000, 10_000)
POD_COUNTS = (1_000, 10_000, 50_000)
GANG = 10
TOUCHED = 10  # running pods changed for the "a few changed" cycle
BATCH = 500  # events per ingest transaction, as the ingest consumer fetches them
_TABLES = "queues, nodes, priority_classes, pod_groups, pods, scheduler_config, decisions, gang_verdicts"


@dataclass(frozen=True)
class Step:
    nodes: int
    pods: int
    first_cycle: Timing
    idle_cycle: Timing
    few_cycle: Timing
    placing_cycle: Timing
    placed: int
    rss_mib: float


def _event(kind: str, obj: dict[str, Any]) -> CloudEvent[Any]:
    meta = obj["metadata"]
    data = ObjectChanged(
        kind=kind,
        namespace=meta.get("namespace"),
        name=meta["name"],
        uid=meta["uid"],
        resource_version=int(meta["resourceVersion"]),
        change="ADDED",
        object=obj,
    )
    return new_event(data, source="scaling")


def _node(i: int) -> CloudEvent[Any]:
    capacity = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    return _event(
        "Node",
        {
            "kind": "Node",
            "metadata": {"name": f"node-{i}", "uid": f"node-{i}", "resourceVersion": "1"},
            "status": {
                "allocatable": capacity,
                "capacity": capacity,
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
    )


def _gang(g: int, *, nodes: int | None) -> list[CloudEvent[Any]]:
    """A PodGroup of GANG pods: bound round-robin and Running when `nodes` is given, else pending."""
    name = f"g{g:06d}"
    events = [
        _event(
            "PodGroup",
            {
                "kind": "PodGroup",
                "metadata": {
                    "name": name,
                    "namespace": "bench",
                    "uid": f"uid-{name}",
                    "resourceVersion": "1",
                    "creationTimestamp": "2026-01-01T00:00:00Z",
                },
                "spec": {"minMember": GANG, "queue": "default"},
                "status": {"phase": "Running" if nodes else "Inqueue"},
            },
        )
    ]
    for i in range(GANG):
        index = g * GANG + i
        node = f"node-{index % nodes}" if nodes else None
        events.append(
            _event(
                "Pod",
                {
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{name}-{i}",
                        "namespace": "bench",
                        "uid": f"uid-{name}-{i}",
                        "resourceVersion": "1",
                        "annotations": {GROUP_NAME: name},
                    },
                    "spec": {
                        "schedulerName": "volcano",
                        "nodeName": node,
                        "containers": [
                            {"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
                        ],
                    },
                    "status": {"phase": "Running" if node else "Pending"},
                },
            )
        )
    return events


def _touched(gangs: int, nodes: int, *, version: int) -> list[CloudEvent[Any]]:
    """A few rows changed and nothing to place: TOUCHED running pods of as many gangs spread
    over the cluster, each seen again with a new resourceVersion (a status update)."""
    events = []
    for g in range(0, gangs, max(1, gangs // TOUCHED))[:TOUCHED]:
        pod = next(e for e in _gang(g, nodes=nodes) if e.data.kind == "Pod")
        meta = {**pod.data.object["metadata"], "resourceVersion": str(version + 2)}
        events.append(_event("Pod", {**pod.data.object, "metadata": meta}))
    return events


async def _ingest(ingester: Ingester, events: list[CloudEvent[Any]]) -> None:
    for start in range(0, len(events), BATCH):
        await ingester.handle(events[start : start + BATCH])


@dataclass(frozen=True)
class Timing:
    cpu_s: float  # the scheduler's own CPU (this process), robust to a shared machine
    wall_s: float  # includes PostgreSQL's work and waiting for a core


async def _timed(loop: CycleLoop, leadership: Leadership) -> tuple[Timing, int]:
    await leadership.try_acquire_or_renew()
    cpu, wall = time.process_time(), time.perf_counter()
    plan = await loop.run_once()
    timing = Timing(time.process_time() - cpu, time.perf_counter() - wall)
    return timing, sum(len(b.binds) for b in plan.binds)


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _measure_nodes(
    sessions: async_sessionmaker[AsyncSession], conf: Path, nodes: int, pod_counts: tuple[int, ...], say: Any
) -> list[Step]:
    async with sessions() as session, session.begin():
        await session.execute(text(f"TRUNCATE {_TABLES}, scheduler_leader, scheduler_outbox"))
    ingester = Ingester(sessions, scheduler_names=["volcano"])
    await _ingest(ingester, [_node(i) for i in range(nodes)])
    leadership = Leadership(sessions, holder="scaling", lease_seconds=600)
    loop = CycleLoop(
        sessions, leadership, clock=SystemClock(), period=1, decision_ttl=600, conf_file=str(conf)
    )
    steps, gangs = [], 0
    for pods in pod_counts:
        running = [e for g in range(gangs, pods // GANG) for e in _gang(g, nodes=nodes)]
        gangs = pods // GANG
        await _ingest(ingester, running)
        loop.memory = ShellMemory()  # a new leader: reads and builds everything
        first, _ = await _timed(loop, leadership)
        idle, _ = await _timed(loop, leadership)
        await _ingest(ingester, _touched(gangs, nodes, version=pods))
        few, _ = await _timed(loop, leadership)
        arriving = [e for g in range(10) for e in _gang(1_000_000 + pods + g, nodes=None)]
        await _ingest(ingester, arriving)
        placing, placed = await _timed(loop, leadership)
        step = Step(nodes, pods, first, idle, few, placing, placed, _rss_mib())
        say(step)
        steps.append(step)
    return steps


def _ms(timing: Timing) -> str:
    return f"{timing.cpu_s * 1000:,.0f} ms ({timing.wall_s * 1000:,.0f} ms)"


def render(steps: list[Step]) -> str:
    when = datetime.now(UTC)
    lines = [
        "# Scheduler scaling: cycle time and memory by cluster size",
        "",
        f"Measured {when:%Y-%m-%d %H:%M} UTC with `python -m phalanx.bench.scaling` "
        "(phalanx/bench/scaling.py): "
        "the scheduler's own cycle (read, plan, fenced commit) on an embedded PostgreSQL, its tables "
        "filled through its ingester; pods of 100m / 128Mi in gangs of 10, bound and Running; "
        "Volcano's benchmark scheduler profile. The machine (2 cores) was shared with other "
        "engineers' work while this ran, so compare the columns with each other more than with "
        "other runs. Each cycle is given as the scheduler's CPU time, then (in brackets) its wall "
        "time, which adds PostgreSQL's work and the wait for a core.",
        "",
        "| nodes | pods | new leader's first cycle (reads all) | cycle, nothing changed | "
        f"cycle, a few changed ({TOUCHED} running pods updated) | "
        "cycle placing 100 new pods (10 gangs) | RSS |",
        "|---|---|---|---|---|---|---|",
    ]
    lines.extend(
        f"| {s.nodes:,} | {s.pods:,} | {_ms(s.first_cycle)} | {_ms(s.idle_cycle)} | {_ms(s.few_cycle)} | "
        f"{_ms(s.placing_cycle)} ({s.placed} placed) | {s.rss_mib:,.0f} MiB |"
        for s in steps
    )
    return "\n".join(lines) + "\n"


async def _measure_all(
    url: str, conf: Path, out: Path, node_counts: tuple[int, ...], pod_counts: tuple[int, ...]
) -> None:
    engine = create_async_engine(url, pool_size=4)
    sessions = make_sessions(engine)
    steps: list[Step] = []
    try:
        for nodes in node_counts:
            steps += await _measure_nodes(
                sessions, conf, nodes, pod_counts, lambda step: print(step, flush=True)
            )
            await asyncio.to_thread(out.write_text, render(steps))
    finally:
        await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/scaling.md"))
    parser.add_argument("--nodes", type=int, nargs="*", default=list(NODE_COUNTS))
    parser.add_argument("--pods", type=int, nargs="*", default=list(POD_COUNTS))
    arguments = parser.parse_args()
    state_dir = Path(tempfile.mkdtemp(prefix="phalanx-scaling-"))
    postgres = provision.provide_postgres(state_dir, durable=False)
    try:
        url = postgres.url_as(roles.MIGRATOR)
        migrate.upgrade(url)
        conf = state_dir / "volcano-scheduler.conf"
        conf.write_text(SCHEDULER_CONF)
        asyncio.run(_measure_all(url, conf, arguments.out, tuple(arguments.nodes), tuple(arguments.pods)))
    finally:
        postgres.stop()
        shutil.rmtree(state_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
