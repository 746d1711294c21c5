"""Benchmark: the per-node CPU of a planning cycle in S1's shape, in the pure scheduling core.

Run `.venv/bin/python -m benchmarks.single_pod_cycle [--nodes 1000 5000 10000]`. For each node
count it builds what a cycle of `phalanx bench s1` sees once the run is under way: two single-pod
gangs running per node (settled, so the cycle books their sums: core/settled.py), 30 new single
pods to place, Volcano's benchmark profile. It times `plan_cycle` as the scheduler calls it, with
the previous plan's node base handed on (state kept between cycles: core/node_base.py), and with
a base built anew as every cycle did before; CPU time, the median of seven cycles, the heap kept
out of the garbage collector as the scheduler keeps it (cycle_loop._freeze_heap). What still
grows with the nodes is the placer's heap of candidate nodes, scored against this cycle's idle.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from phalanx.bench.runner import SCHEDULER_CONF
from services.scheduler.core import GangInfo, NodeInfo, QueueInfo, Snapshot, TaskInfo, parse_conf, plan_cycle
from services.scheduler.core.settled import settled_of
from shared.domain.resources import Resources

NOW = datetime(2026, 1, 1, tzinfo=UTC)
NEW_PODS = 30
SETTLED_PER_NODE = 2


def _gang(name: str, node: str | None) -> GangInfo:
    request = Resources.parse({"cpu": "100m", "memory": "500Mi"}) + Resources({"pods": 1000})
    status = "Running" if node else "Pending"
    task = TaskInfo(uid=name, namespace="bench", name=name, request=request, node=node, status=status)
    return GangInfo(
        uid=name,
        namespace="bench",
        name=name,
        queue="default",
        min_member=1,
        created=NOW,
        tasks=(task,),
        phase="Running" if node else "Pending",
    )


def cluster(nodes: int) -> Snapshot:
    allocatable = Resources.parse({"cpu": "4", "memory": "32Gi", "pods": "110"})
    infos = tuple(NodeInfo(name=f"n{i:05d}", allocatable=allocatable) for i in range(nodes))
    running = [_gang(f"s{i:06d}", f"n{i % nodes:05d}") for i in range(nodes * SETTLED_PER_NODE)]
    new = [_gang(f"p{i:06d}", None) for i in range(NEW_PODS)]
    snapshot = Snapshot(nodes=infos, queues=(QueueInfo(name="default"),), gangs=(*running, *new), now=NOW)
    return replace(snapshot, settled=settled_of(snapshot.gangs, {"default"}))


def _median_ms(run: Callable[[], object]) -> float:
    times = []
    for _ in range(7):
        started = time.process_time()
        run()
        times.append((time.process_time() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, nargs="*", default=[1_000, 5_000, 10_000])
    args = parser.parse_args()
    conf = parse_conf(SCHEDULER_CONF)
    print("| nodes | placed | cycle, base kept | cycle, base built | per node, kept | per node, built |")
    print("|---|---|---|---|---|---|")
    for nodes in args.nodes:
        snapshot = cluster(nodes)
        gc.collect()
        gc.freeze()
        first = plan_cycle(snapshot, conf)
        kept = _median_ms(lambda: plan_cycle(snapshot, conf, first.node_base))  # noqa: B023
        built = _median_ms(lambda: plan_cycle(snapshot, conf))  # noqa: B023
        placed = first.placements
        print(
            f"| {nodes:,} | {placed} | {kept:.1f} ms | {built:.1f} ms | "
            f"{kept * 1000 / nodes:.1f} µs | {built * 1000 / nodes:.1f} µs |"
        )
        gc.unfreeze()


if __name__ == "__main__":
    main()
