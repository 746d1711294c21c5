"""Benchmark of the pure scheduling core: one `plan_cycle` over a large synthetic cluster.

Run `.venv/bin/python -m benchmarks.scheduler_core` (add `--sizes 1000x10000` to pick sizes,
`--profile` to print the hottest functions). It builds deterministic clusters of identical
nodes, four weighted queues and pending gangs of 1 to 100 pods drawn from a few pod sizes, runs
one cycle with Volcano's default configuration, and prints cycle time and placements per
second. Figures are recorded by hand in benchmarks/results/scheduler_core.md.
"""

from __future__ import annotations

import argparse
import cProfile
import platform
import pstats
import random
import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from services.scheduler.core import (
    DEFAULT_CONF,
    GangInfo,
    NodeInfo,
    QueueInfo,
    SchedulerConf,
    Snapshot,
    TaskInfo,
    parse_conf,
    plan_cycle,
)
from shared.domain.resources import Resources

# Pod sizes (cpu, memory), like a handful of container profiles in a real cluster.
POD_SIZES = (("500m", "1Gi"), ("1", "2Gi"), ("2", "4Gi"), ("4", "8Gi"), ("1", "8Gi"), ("8", "16Gi"))
NOW = datetime(2026, 1, 1, tzinfo=UTC)

BINPACK_CONF = parse_conf(
    """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion},
            {name: nodeorder}, {name: binpack}]
"""
)


@dataclass(frozen=True)
class Result:
    nodes: int
    pods: int
    gangs: int
    seconds: float
    placements: int

    @property
    def rate(self) -> float:
        return self.placements / self.seconds


def build_snapshot(nodes: int, pods: int, seed: int = 7, node_cpu: str = "64") -> Snapshot:
    rng = random.Random(seed)
    node_infos = tuple(
        NodeInfo(
            name=f"node-{i:05d}",
            allocatable=Resources.parse({"cpu": node_cpu, "memory": "256Gi", "pods": "110"}),
            labels={"kubernetes.io/hostname": f"node-{i:05d}"},
        )
        for i in range(nodes)
    )
    queues = tuple(QueueInfo(name=f"q{i}", weight=i + 1) for i in range(4))
    requests = [
        Resources.parse({"cpu": cpu, "memory": mem}) + Resources({"pods": 1000}) for cpu, mem in POD_SIZES
    ]
    gangs: list[GangInfo] = []
    made = 0
    while made < pods:
        size = min(rng.randint(1, 100), pods - made)
        request = rng.choice(requests)
        uid = f"gang-{len(gangs):06d}"
        tasks = tuple(
            TaskInfo(
                uid=f"{uid}-{j}",
                namespace="bench",
                name=f"job{len(gangs)}-worker-{j}",
                task_role="worker",
                request=request,
            )
            for j in range(size)
        )
        gangs.append(
            GangInfo(
                uid=uid,
                namespace="bench",
                name=f"job{len(gangs)}",
                queue=f"q{rng.randrange(4)}",
                min_member=size,
                created=NOW - timedelta(seconds=len(gangs)),
                phase="Inqueue",
                tasks=tasks,
            )
        )
        made += size
    return Snapshot(nodes=node_infos, queues=queues, gangs=tuple(gangs), now=NOW)


def run(nodes: int, pods: int, conf: SchedulerConf, profile: bool = False, node_cpu: str = "64") -> Result:
    snapshot = build_snapshot(nodes, pods, node_cpu=node_cpu)
    profiler = cProfile.Profile() if profile else None
    started = time.perf_counter()
    if profiler:
        profiler.enable()
    plan = plan_cycle(snapshot, conf)
    if profiler:
        profiler.disable()
    seconds = time.perf_counter() - started
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    return Result(nodes, pods, len(snapshot.gangs), seconds, plan.placements)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000x10000,5000x50000", help="NODESxPODS,...")
    parser.add_argument("--conf", choices=("default", "binpack"), default="default")
    parser.add_argument("--node-cpu", default="64", help="CPUs per node (16 makes it contended)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size; best and median shown")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    conf = DEFAULT_CONF if args.conf == "default" else BINPACK_CONF
    print(f"python {platform.python_version()} on {platform.processor() or platform.machine()}")
    print(
        "| nodes | pods | gangs | placements | best cycle (s) | median cycle (s) "
        "| placements/s (best) | placements/s (median) | µs per node*pod (median) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in args.sizes.split(","):
        nodes, pods = (int(part) for part in size.split("x"))
        runs = [
            run(nodes, pods, conf, profile=args.profile, node_cpu=args.node_cpu)
            for _ in range(1 if args.profile else args.repeat)
        ]
        best = min(r.seconds for r in runs)
        median = statistics.median(r.seconds for r in runs)
        placements = runs[0].placements
        print(
            f"| {nodes} | {pods} | {runs[0].gangs} | {placements} | {best:.2f} | {median:.2f} "
            f"| {placements / best:,.0f} | {placements / median:,.0f} "
            f"| {median / (nodes * pods) * 1e6:.5f} |"
        )


if __name__ == "__main__":
    main()
