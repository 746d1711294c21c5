"""Make the contended trace `phalanx replay` ships with, from a seed: the same seed, the same trace.

    .venv/bin/python -m benchmarks.traces.generate_contended --seed 5 \
        --out benchmarks/traces/contended-like.json

The shipped philly- and helios-like traces (generate.py) are demand-limited: the cluster runs at
about half its GPUs, so a queue's share over a day is set by what it submits and no sharing rule
can change it much. This one is contended, to measure fair share over time (docs/fairness.md):
- overnight (`--night` hours from 0) one queue (`--flood`, nlp by default) floods the cluster
  alone, offering `--night-load` times its GPUs;
- in the morning, until `--day-end` hours, the other queues arrive too; every queue then offers
  `--day-load` times the cluster's GPUs divided evenly among the queues, which is above every
  queue's entitlement (weights vision 2, nlp 2, speech 1), so the queues compete all day and the
  offered load stays well above the cluster until the backlog drains, late in the day.
Jobs are mostly single-node (1 to 8 GPUs, a few 16-GPU gangs of two pods); each queue has its job
classes with their own typical runtime (median about 2 h, heavy-tailed, at most 12 h); users
declare a padded limit for 80% of the jobs, as in generate.py.
"""

from __future__ import annotations

import argparse
import math
import random
from pathlib import Path

from benchmarks.traces.generate import NODE, QUEUES, RUNS_SPREAD, gpu_job, render
from phalanx.replay.trace import NodeGroup, Trace
from shared.domain.resources import Resources

HOUR = 3600.0
SIZES = ((1, 0.30), (2, 0.15), (4, 0.20), (8, 0.25), (16, 0.10))  # GPUs per job and how often
CLASS_MEDIAN, CLASS_SPREAD = 2 * HOUR, 0.5
CLASSES_PER_QUEUE = 4
LONGEST = 12 * HOUR


def _job_shape(
    draw: random.Random, classes: dict[tuple[str, str], float], queue: str
) -> tuple[int, str, float]:
    sizes, weights = zip(*SIZES, strict=True)
    gpus = draw.choices(sizes, weights)[0]
    klass = draw.choice(sorted(k for q, k in classes if q == queue))
    runtime = classes[(queue, klass)] * math.exp(draw.gauss(0.0, RUNS_SPREAD))
    return gpus, klass, min(LONGEST, max(300.0, runtime))


def _mean_work(classes: dict[tuple[str, str], float], seed: int) -> float:
    """GPU-seconds of an average job, from a sample drawn apart (the trace's own draws unchanged)."""
    draw = random.Random(seed + 1)
    sample = [_job_shape(draw, classes, q) for q, _ in QUEUES for _ in range(2000)]
    return sum(g * r for g, _, r in sample) / len(sample)


def _arrivals(draw: random.Random, start: float, end: float, rate: float) -> list[float]:
    times, t = [], start
    while True:
        t += draw.expovariate(rate)
        if t >= end:
            return times
        times.append(t)


def generate(
    seed: int, nodes: int, flood: str, night: float, night_load: float, day_load: float, day_end: float
) -> Trace:
    draw = random.Random(seed)
    classes = {
        (queue, f"{queue}-model{c}"): CLASS_MEDIAN * math.exp(draw.gauss(0.0, CLASS_SPREAD))
        for queue, _ in QUEUES
        for c in range(CLASSES_PER_QUEUE)
    }
    gpus_total = nodes * 8
    work = _mean_work(classes, seed)
    streams = [(t, flood) for t in _arrivals(draw, 0.0, night * HOUR, night_load * gpus_total / work)]
    per_queue = day_load * gpus_total / len(QUEUES) / work
    for queue, _ in QUEUES:
        streams += [(t, queue) for t in _arrivals(draw, night * HOUR, day_end * HOUR, per_queue)]
    jobs = []
    for index, (arrival, queue) in enumerate(sorted(streams)):
        gpus, klass, runtime = _job_shape(draw, classes, queue)
        jobs.append(gpu_job(f"contended-{index:04d}", queue, arrival, gpus, runtime, klass, draw))
    description = (
        f"contended ML cluster trace: {flood} floods {nodes} nodes of 8 GPUs alone for {night:g} h "
        f"(offered load {night_load:g}), then every queue until {day_end:g} h (offered load {day_load:g} "
        f"in all, split evenly), seed {seed} (benchmarks/traces/generate_contended.py)"
    )
    return Trace(
        "contended-like", description, (NodeGroup(nodes, Resources.parse(NODE)),), QUEUES, tuple(jobs)
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--flood", choices=[q for q, _ in QUEUES], default="nlp")
    parser.add_argument("--night", type=float, default=8.0, help="hours the flood queue has alone")
    parser.add_argument("--night-load", type=float, default=2.0)
    parser.add_argument("--day-load", type=float, default=2.0)
    parser.add_argument("--day-end", type=float, default=18.0, help="hour the last job arrives")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    trace = generate(
        args.seed, args.nodes, args.flood, args.night, args.night_load, args.day_load, args.day_end
    )
    args.out.write_text(render(trace))


if __name__ == "__main__":
    main()
