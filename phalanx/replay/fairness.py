"""How fairly a replay shared the cluster: Jain's index of each queue's share over its entitlement.

A queue's share is the part of the cluster's main resource (GPUs when the trace has any) its
running jobs held over a window; its entitlement is its weight over the weights of the queues that
had work (running or waiting) in that window, so a queue with nothing to run is not counted as
treated unfairly. Jain's index (sum x)^2 / (n * sum x^2) is 1 when every queue's share is exactly
proportional to its entitlement and falls towards 1/n as one queue takes everything.
Two figures: over the whole first `horizon` (does a day's share track the weights?) and the mean
over its hours (is it fair hour by hour, or only on average?).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from phalanx.replay.engine import Replay
from phalanx.replay.report import main_resource

HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class Fairness:
    day_index: float
    hourly_mean: float
    day_share: dict[str, float]  # queue -> share of the main resource over the horizon


def jain(values: Sequence[float]) -> float:
    if not values or not any(values):
        return 1.0
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


def _window(replay: Replay, start: float, end: float) -> tuple[dict[str, float], set[str]]:
    """GPU-seconds (or CPU-seconds) per queue held in [start, end), and the queues with work then."""
    resource = main_resource(replay)
    held: dict[str, float] = {}
    busy: set[str] = set()
    for outcome in replay.outcomes.values():
        job = outcome.job
        finish = outcome.end if outcome.end is not None else float("inf")
        if job.arrival < end and finish > start:
            busy.add(job.queue)
        if outcome.start is None:
            continue
        overlap = min(finish, end) - max(outcome.start, start)
        if overlap > 0:
            amount = job.request.get(resource) / 1000 * job.tasks
            held[job.queue] = held.get(job.queue, 0.0) + amount * overlap
    return held, busy


def _index(held: Mapping[str, float], busy: set[str], weights: Mapping[str, int], seconds: float) -> float:
    if not busy:
        return 1.0
    total_weight = sum(weights[q] for q in busy)
    return jain([held.get(q, 0.0) / seconds / (weights[q] / total_weight) for q in sorted(busy)])


def measure(replay: Replay, horizon: float = 24 * HOUR) -> Fairness:
    resource = main_resource(replay)
    capacity = sum(node.allocatable.get(resource) for node in replay.nodes) / 1000
    weights = dict(replay.trace.queues)
    held, busy = _window(replay, 0.0, horizon)
    day = _index(held, busy, weights, capacity * horizon)
    hourly = []
    for hour in range(int(horizon // HOUR)):
        h_held, h_busy = _window(replay, hour * HOUR, (hour + 1) * HOUR)
        hourly.append(_index(h_held, h_busy, weights, capacity * HOUR))
    shares = {q: held.get(q, 0.0) / (capacity * horizon) for q in sorted(weights)}
    return Fairness(day, sum(hourly) / len(hourly) if hourly else 1.0, shares)
