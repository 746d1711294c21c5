"""The benchmark's arithmetic: throughput three ways, latency percentiles and partial gangs."""

from __future__ import annotations

import math

import pytest

from phalanx.bench import figures, workloads

pytestmark = pytest.mark.unit


def test_percentile_interpolates_between_closest_ranks() -> None:
    values = [float(v) for v in range(1, 101)]  # 1 .. 100
    assert figures.percentile(values, 50) == pytest.approx(50.5)
    assert figures.percentile(values, 99) == pytest.approx(99.01)
    assert figures.percentile([3.0], 99) == 3.0
    assert math.isnan(figures.percentile([], 50))


def test_throughput_latency_and_whole_gangs() -> None:
    # Two gangs of two pods: created at 0 s; gang a bound at 1 and 2 s, gang b at 3 and 4 s.
    created = {
        "bench/a-worker-0": 0.0,
        "bench/a-worker-1": 0.0,
        "bench/b-worker-0": 0.0,
        "bench/b-worker-1": 0.0,
    }
    bound = {
        "bench/a-worker-0": 1.0,
        "bench/a-worker-1": 2.0,
        "bench/b-worker-0": 3.0,
        "bench/b-worker-1": 4.0,
    }
    result = figures.compute(
        started=0.0,
        created=created,
        bound=bound,
        pods_expected=4,
        gang_of=workloads.job_of_pod,
        gang_minimum={"a": 2, "b": 2},
        gangs_created={"a": 0.0, "b": 0.5},
    )
    assert result.pods_bound == 4
    assert result.all_bound_s == 4.0
    assert result.pods_per_s_bind_window == pytest.approx(4 / 3)  # binds ÷ (last - first bind)
    assert result.pods_per_s_end_to_end == pytest.approx(1.0)  # binds ÷ (last bind - first create)
    assert result.pods_per_s_sampled == pytest.approx(4 / 3)  # 4 binds over 3 one-second samples
    assert result.pod_latency.max == 4.0
    assert result.pod_latency.p50 == pytest.approx(2.5)
    assert result.job_latency is not None
    assert result.job_latency.max == pytest.approx(3.5)  # gang b: created at 0.5 s, last bind at 4 s
    assert (result.gangs_whole, result.gangs_unplaced, result.gangs_partial) == (2, 0, 0)
    assert result.gang_bind_spread is not None
    assert result.gang_bind_spread.max == pytest.approx(1.0)


def test_a_gang_short_of_its_minimum_counts_as_partial_and_an_empty_one_as_unplaced() -> None:
    created = {f"bench/{g}-worker-{i}": 0.0 for g in "abc" for i in range(3)}
    bound = {
        "bench/a-worker-0": 1.0,
        "bench/a-worker-1": 1.0,
        "bench/a-worker-2": 1.0,
        "bench/b-worker-0": 2.0,
    }
    result = figures.compute(
        started=0.0,
        created=created,
        bound=bound,
        pods_expected=9,
        gang_of=workloads.job_of_pod,
        gang_minimum={"a": 3, "b": 3, "c": 3},
    )
    assert (result.gangs_whole, result.gangs_partial, result.gangs_unplaced) == (1, 1, 1)
    assert result.job_latency is None


def test_job_of_pod_reads_volcanos_pod_names() -> None:
    assert workloads.job_of_pod("bench/j00042-worker-17") == "j00042"
    assert workloads.job_of_pod("bench/my-job-ps-0") == "my-job"
