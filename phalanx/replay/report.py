"""What a replay shows: per queue utilization, waits by job size, makespan, prediction error.

- utilization: the share of the cluster's capacity of the trace's main resource (GPUs when the
  trace has any, else CPUs) that a queue's running jobs held, over the makespan;
- wait: from arrival to start, mean and 95th percentile per size class (the job's total amount of
  the main resource);
- makespan: from the first arrival to the last end;
- prediction error: for jobs that waited and had a start predicted when they arrived,
  |predicted - actual start| as a share of their wait; the median and the 90th percentile, and how
  many waiting jobs had a prediction at all.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from phalanx.replay.engine import JobOutcome, Replay

SIZE_CLASSES = ((1, "1"), (8, "2-8"), (32, "9-32"), (math.inf, "33+"))


@dataclass(frozen=True, slots=True)
class Figures:
    makespan: float
    utilization: dict[str, float]  # queue (and "all") -> share of capacity
    waits: dict[str, tuple[int, float, float]]  # size class -> (jobs, mean, p95)
    prediction_median: float | None
    prediction_p90: float | None
    predicted_share: float  # waiting jobs that got a prediction
    stuck: int


def main_resource(replay: Replay) -> str:
    gpu = [name for node in replay.nodes for name in node.allocatable if "gpu" in name]
    return gpu[0] if gpu else "cpu"


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def size_class(amount: float) -> str:
    return next(label for bound, label in SIZE_CLASSES if amount <= bound)


def figures(replay: Replay) -> Figures:
    resource = main_resource(replay)
    unit = 1000
    done = [o for o in replay.outcomes.values() if o.start is not None and o.end is not None]
    first = min(o.job.arrival for o in replay.outcomes.values())
    makespan = max((o.end or 0.0) for o in done) - first if done else 0.0
    capacity = sum(node.allocatable.get(resource) for node in replay.nodes) / unit
    held: dict[str, float] = {}
    for o in done:
        amount = o.job.request.get(resource) / unit * o.job.tasks
        seconds = (o.end or 0.0) - (o.start or 0.0)
        held[o.job.queue] = held.get(o.job.queue, 0.0) + amount * seconds
    utilization = {q: value / (capacity * makespan) for q, value in sorted(held.items())} if makespan else {}
    utilization["all"] = sum(utilization.values())
    by_size: dict[str, list[float]] = {}
    for o in done:
        label = size_class(o.job.request.get(resource) / unit * o.job.tasks)
        by_size.setdefault(label, []).append((o.start or 0.0) - o.job.arrival)
    waits = {
        label: (len(by_size[label]), statistics.fmean(by_size[label]), percentile(by_size[label], 0.95))
        for _, label in SIZE_CLASSES
        if label in by_size
    }
    errors, waited = _prediction_errors(done)
    return Figures(
        makespan=makespan,
        utilization=utilization,
        waits=waits,
        prediction_median=statistics.median(errors) if errors else None,
        prediction_p90=percentile(errors, 0.9) if errors else None,
        predicted_share=len(errors) / waited if waited else 0.0,
        stuck=len(replay.stuck),
    )


def _prediction_errors(done: Sequence[JobOutcome]) -> tuple[list[float], int]:
    errors = []
    waited = 0
    for o in done:
        wait = (o.start or 0.0) - o.job.arrival
        if wait <= 0:
            continue
        waited += 1
        if o.predicted is not None:
            errors.append(abs(o.predicted - (o.start or 0.0)) / wait)
    return errors, waited


def render(replay: Replay, result: Figures, label: str) -> str:
    lines = [
        f"replay of {replay.trace.name} ({len(replay.outcomes)} jobs, {len(replay.nodes)} nodes): {label}",
        f"  makespan {hours(result.makespan)}, {replay.cycles} cycles, {result.stuck} jobs never started",
        "  utilization: " + ", ".join(f"{q} {share:.1%}" for q, share in result.utilization.items()),
        "  wait by size (jobs, mean, p95): "
        + "; ".join(
            f"{size}: {n}, {hours(mean)}, {hours(p95)}" for size, (n, mean, p95) in result.waits.items()
        ),
    ]
    if result.prediction_median is not None:
        lines.append(
            f"  prediction error / wait: median {result.prediction_median:.1%}, "
            f"p90 {result.prediction_p90 or 0.0:.1%}, {result.predicted_share:.0%} of waiting jobs predicted"
        )
    return "\n".join(lines)


def hours(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.0f} s"
