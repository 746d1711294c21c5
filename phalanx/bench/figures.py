"""From the simulator's audit (when each pod was created and bound) to the figures the issue asks
for. Pure: plain dicts of wall-clock seconds in, a `Figures` out.

Throughput is given three ways, as the peers give it: binds ÷ (last bind - first bind) (Volcano's
benchmark), binds ÷ (last bind - first create) (end to end), and the mean of per-second bind
counts between the first and the last bind (kube-scheduler's scheduler_perf).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation between closest ranks."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True)
class Spread:
    p50: float
    p90: float
    p99: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        return cls(
            percentile(values, 50),
            percentile(values, 90),
            percentile(values, 99),
            max(values, default=math.nan),
        )


@dataclass(frozen=True)
class Figures:
    pods_expected: int
    pods_created: int
    pods_bound: int
    all_created_s: float  # first create sent → last pod exists
    all_bound_s: float  # first create sent → last bind
    pods_per_s_bind_window: float
    pods_per_s_end_to_end: float
    pods_per_s_sampled: float
    pod_latency: Spread  # pod created → bound
    job_latency: Spread | None  # Job created → its last pod bound (Jobs only)
    gangs: int
    gangs_whole: int
    gangs_unplaced: int
    gangs_partial: int  # some but not all of the gang's minimum bound when the run ended
    gang_bind_spread: Spread | None  # first → last bind within each whole gang


def compute(
    *,
    started: float,
    created: Mapping[str, float],
    bound: Mapping[str, float],
    pods_expected: int,
    gang_of: Callable[[str], str],
    gang_minimum: Mapping[str, int],
    gangs_created: Mapping[str, float] | None = None,
) -> Figures:
    bind_times = sorted(bound.values())
    first_bind, last_bind = (bind_times[0], bind_times[-1]) if bind_times else (math.nan, math.nan)
    window = last_bind - first_bind
    count = len(bind_times)

    per_second = Counter(int(t - first_bind) for t in bind_times)
    seconds = max(1, math.ceil(window)) if count else 0
    sampled = sum(per_second.values()) / seconds if seconds else 0.0

    latencies = [bound[key] - created[key] for key in bound if key in created]

    binds_by_gang: dict[str, list[float]] = defaultdict(list)
    for key, when in bound.items():
        binds_by_gang[gang_of(key)].append(when)
    whole = [g for g, minimum in gang_minimum.items() if len(binds_by_gang.get(g, ())) >= minimum]
    unplaced = [g for g in gang_minimum if not binds_by_gang.get(g)]
    partial = len(gang_minimum) - len(whole) - len(unplaced)
    spreads = [max(binds_by_gang[g]) - min(binds_by_gang[g]) for g in whole]
    job_latency = None
    if gangs_created:
        job_latency = Spread.of(
            [max(binds_by_gang[g]) - gangs_created[g] for g in whole if g in gangs_created]
        )

    return Figures(
        pods_expected=pods_expected,
        pods_created=len(created),
        pods_bound=count,
        all_created_s=max(created.values(), default=math.nan) - started,
        all_bound_s=last_bind - started,
        pods_per_s_bind_window=count / window if window > 0 else math.nan,
        pods_per_s_end_to_end=count / (last_bind - started) if count else 0.0,
        pods_per_s_sampled=sampled,
        pod_latency=Spread.of(latencies),
        job_latency=job_latency,
        gangs=len(gang_minimum),
        gangs_whole=len(whole),
        gangs_unplaced=len(unplaced),
        gangs_partial=partial,
        gang_bind_spread=Spread.of(spreads) if spreads else None,
    )
