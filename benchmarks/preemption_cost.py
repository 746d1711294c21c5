"""Benchmark: GPU-hours lost to preemption, preemptioncost against Volcano's priority-only choice.

    python -m benchmarks.preemption_cost [--scenarios 200] [--seed 7] [--write FILE]

`phalanx replay` does not model preemption (its engine places and finishes jobs; nothing is
evicted), so this compares the two victim choices on the pure scheduling core, cycle by cycle:
each scenario is a cluster of 4-GPU nodes full of low-priority gangs (1 to 4 one-GPU pods, each
running 0 to 24 hours, a third of them with a checkpoint 0 to 2 hours old) and a few
high-priority gangs that need room. Both configurations plan the same cycle; for each, the GPU
time lost is, over the evicted gangs, the hours since their checkpoint (or start) times the GPUs
they held. Counted too: the preemptors that got room and the pods evicted, so the comparison is
made at the same number of preemptions.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from services.scheduler.core import GangInfo, NodeInfo, QueueInfo, Snapshot, TaskInfo
from services.scheduler.core.config import SchedulerConf, parse_conf
from services.scheduler.core.cycle import plan_cycle
from shared.domain.resources import Resources

GPU = "nvidia.com/gpu"
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
_TIERS = """
actions: "enqueue, allocate, preempt"
tiers:
- plugins: [{{name: priority}}, {{name: gang}}, {{name: conformance}}]
- plugins: [{{name: predicates}}, {{name: nodeorder}}{extra}]
"""
PRIORITY_ONLY = parse_conf(_TIERS.format(extra=""))
COST = parse_conf(_TIERS.format(extra=", {name: preemptioncost}"))


@dataclass
class Tally:
    gpu_hours_lost: float = 0.0
    pods_evicted: int = 0
    gangs_evicted: int = 0
    preemptors_served: int = 0


def _pod(uid: str, gpus: int, node: str | None, started: datetime | None) -> TaskInfo:
    request = Resources.parse({"cpu": "4", "memory": "8Gi", GPU: str(gpus), "pods": "1"})
    status = "Running" if node else "Pending"
    return TaskInfo(
        uid=uid, namespace="bench", name=uid, request=request, node=node, status=status, started=started
    )


def _gang(
    uid: str,
    tasks: tuple[TaskInfo, ...],
    created: datetime,
    priority: int,
    phase: str,
    annotations: dict[str, str],
) -> GangInfo:
    return GangInfo(
        uid=uid,
        namespace="bench",
        name=uid,
        queue="default",
        min_member=len(tasks),
        created=created,
        tasks=tasks,
        priority=priority,
        phase=phase,
        annotations=annotations,
    )


def scenario(rng: random.Random, index: int) -> tuple[Snapshot, dict[str, float]]:
    """The cluster and, per victim gang uid, the GPU-hours its eviction loses."""
    nodes = [f"n{i}" for i in range(rng.randint(4, 10))]
    gangs: list[GangInfo] = []
    lost: dict[str, float] = {}
    for node in nodes:
        free = 4
        while free > 0:
            size = rng.randint(1, free)
            free -= size
            uid = f"s{index}-{node}-v{free}"
            started = NOW - timedelta(hours=rng.uniform(0, 24))
            annotations = {}
            since = started
            if rng.random() < 1 / 3:
                since = max(started, NOW - timedelta(hours=rng.uniform(0, 2)))
                annotations["phalanx.io/last-checkpoint"] = since.isoformat()
            tasks = tuple(_pod(f"{uid}-{p}", 1, node, started) for p in range(size))
            gangs.append(_gang(uid, tasks, started, 1, "Running", annotations))
            lost[uid] = (NOW - since).total_seconds() / 3600 * size
    for p in range(rng.randint(1, 3)):
        uid = f"s{index}-urgent-{p}"
        size, gpus = rng.choice([(1, 1), (1, 2), (2, 2), (1, 4)])
        tasks = tuple(_pod(f"{uid}-{i}", gpus, None, None) for i in range(size))
        gangs.append(_gang(uid, tasks, NOW, 100, "Inqueue", {}))
    infos = tuple(
        NodeInfo(
            name=n, allocatable=Resources.parse({"cpu": "64", "memory": "256Gi", GPU: "4", "pods": "110"})
        )
        for n in nodes
    )
    return Snapshot(nodes=infos, queues=(QueueInfo(name="default"),), gangs=tuple(gangs), now=NOW), lost


def measure(snapshot: Snapshot, lost: dict[str, float], conf: SchedulerConf, tally: Tally) -> None:
    plan = plan_cycle(snapshot, conf)
    owner = {t.uid: g.uid for g in snapshot.gangs for t in g.tasks}
    victims = {owner[e.task_uid] for e in plan.evictions}
    tally.pods_evicted += len(plan.evictions)
    tally.gangs_evicted += len(victims)
    tally.gpu_hours_lost += sum(lost[v] for v in victims)
    tally.preemptors_served += len({e.preemptor_gang_uid for e in plan.evictions})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--write", type=Path)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    results = {"priority-only (Volcano)": Tally(), "preemptioncost": Tally()}
    for index in range(args.scenarios):
        snapshot, lost = scenario(rng, index)
        measure(snapshot, lost, PRIORITY_ONLY, results["priority-only (Volcano)"])
        measure(snapshot, lost, COST, results["preemptioncost"])
    lines = [
        f"{args.scenarios} scenarios, seed {args.seed}: one cycle each, the same snapshot for both choices.",
        "",
        "| victim choice | preemptors given room | gangs evicted | pods evicted | GPU-hours lost |",
        "|---|---|---|---|---|",
    ]
    for name, t in results.items():
        counts = f"{t.preemptors_served} | {t.gangs_evicted} | {t.pods_evicted}"
        lines.append(f"| {name} | {counts} | {t.gpu_hours_lost:.1f} |")
    text = "\n".join(lines)
    print(text)
    if args.write:
        args.write.write_text(text + "\n")


if __name__ == "__main__":
    main()
