"""Make the workload traces `phalanx replay` ships with, from a seed: the same seed, the same trace.

    .venv/bin/python -m benchmarks.traces.generate --shape philly --seed 7 --jobs 400 \
        --out benchmarks/traces/philly-like.json
    .venv/bin/python -m benchmarks.traces.generate --shape helios --seed 11 --jobs 400 \
        --out benchmarks/traces/helios-like.json

The shapes follow what the published ML-cluster traces report, not their data:
- philly (Microsoft Philly, Jeon et al., ATC'19): most jobs take 1 GPU, a few take 8 or more, and
  the largest (16 to 64 GPUs, whole 8-GPU nodes) take most GPU time; runtimes are heavy-tailed
  (median tens of minutes, tail of days), arrivals a steady Poisson stream;
- helios (SenseTime Helios, Hu et al., SC'21): more multi-node jobs, shorter runtimes, and
  arrivals in day-time bursts (a daily cycle).
Each job class (queue + model family) has its own typical runtime, so estimates can be learned;
users declare a padded limit (1x to 3x the runtime, rounded up to 30 min) for 80% of the jobs.
The arrival rate is set so the offered GPU load is `--load` times the cluster's GPUs.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path

from phalanx.replay.trace import NodeGroup, Trace, TraceJob, dump
from shared.domain.resources import Resources

NODE = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"}
QUEUES = (("vision", 2), ("nlp", 2), ("speech", 1))
# GPUs per job and how often, per shape.
SIZES = {
    "philly": ((1, 0.62), (2, 0.10), (4, 0.10), (8, 0.10), (16, 0.05), (32, 0.02), (64, 0.01)),
    "helios": ((1, 0.45), (2, 0.08), (4, 0.10), (8, 0.17), (16, 0.10), (32, 0.07), (64, 0.03)),
}
# Median runtime (seconds) of a class, drawn per class, and the spread of runs inside a class.
CLASS_MEDIAN = {"philly": (1800.0, 1.2), "helios": (900.0, 1.0)}
RUNS_SPREAD = 0.35
CLASSES_PER_QUEUE = 6


def generate(shape: str, seed: int, jobs: int, nodes: int, load: float) -> Trace:
    draw = random.Random(seed)
    median, spread = CLASS_MEDIAN[shape]
    classes = {
        (queue, f"{queue}-model{c}"): median * math.exp(draw.gauss(0.0, spread))
        for queue, _ in QUEUES
        for c in range(CLASSES_PER_QUEUE)
    }
    keys = sorted(classes)
    sizes, weights = zip(*SIZES[shape], strict=True)
    drafts = []
    for _ in range(jobs):
        gpus = draw.choices(sizes, weights)[0]
        queue, klass = draw.choice(keys)
        scale = 1.0 + math.log2(gpus) / 3  # larger jobs train longer
        runtime = min(
            3 * 86400.0, max(60.0, classes[(queue, klass)] * scale * math.exp(draw.gauss(0, RUNS_SPREAD)))
        )
        drafts.append((gpus, queue, klass, runtime))
    mean_work = sum(g * r for g, _, _, r in drafts) / jobs
    rate = load * nodes * 8 / mean_work  # arrivals per second
    t = 0.0
    result = []
    for index, (gpus, queue, klass, runtime) in enumerate(drafts):
        gap = draw.expovariate(rate)
        if shape == "helios":  # day-time bursts: arrivals three times as dense half of the day
            gap *= 0.5 if math.sin(2 * math.pi * t / 86400) > 0 else 1.5
        t += gap
        result.append(gpu_job(f"{shape}-{index:04d}", queue, t, gpus, runtime, klass, draw))
    description = (
        f"{shape}-shaped ML cluster trace: {jobs} jobs on {nodes} nodes of 8 GPUs, offered load {load}, "
        f"seed {seed} (benchmarks/traces/generate.py)"
    )
    return Trace(
        f"{shape}-like", description, (NodeGroup(nodes, Resources.parse(NODE)),), QUEUES, tuple(result)
    )


def gpu_job(
    name: str, queue: str, arrival: float, gpus: int, runtime: float, klass: str, draw: random.Random
) -> TraceJob:
    """One job of `gpus` GPUs (whole 8-GPU nodes above 8), 8 CPUs and 64Gi per GPU; 80% of users
    declare a padded limit (1x to 3x the runtime, rounded up to 30 min)."""
    tasks, per_task = (1, gpus) if gpus <= 8 else (gpus // 8, 8)
    declared = None
    if draw.random() < 0.8:
        declared = math.ceil(runtime * draw.uniform(1.0, 3.0) / 1800) * 1800.0
    request = {"cpu": str(8 * per_task), "memory": f"{64 * per_task}Gi", "nvidia.com/gpu": str(per_task)}
    return TraceJob(
        name=name,
        queue=queue,
        arrival=round(arrival, 1),
        tasks=tasks,
        request=Resources.parse(request),
        runtime=round(runtime, 1),
        estimate=declared,
        job_class=klass,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shape", choices=sorted(SIZES), default="philly")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=400)
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--load", type=float, default=1.0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    trace = generate(args.shape, args.seed, args.jobs, args.nodes, args.load)
    args.out.write_text(render(trace))


def render(trace: Trace) -> str:
    """JSON with one job per line, so that a trace reads (and diffs) line by line."""
    raw = dump(trace)
    jobs = raw.pop("jobs")
    head = json.dumps(raw, indent=1)[:-2]
    lines = ",\n  ".join(json.dumps(job) for job in jobs)
    return f'{head},\n "jobs": [\n  {lines}\n ]\n}}\n'


if __name__ == "__main__":
    main()
