"""The scenarios are the ones issue #8 names, and a scaled copy keeps their shape."""

from __future__ import annotations

import pytest

from phalanx.bench import workloads
from phalanx.bench.workloads import SCENARIOS
from shared.volcano.job import Job

pytestmark = pytest.mark.unit


def test_the_scenarios_match_the_issue() -> None:
    s1 = SCENARIOS["s1"]
    assert (s1.nodes.count, s1.nodes.cpu, s1.nodes.memory, s1.nodes.pods) == (5_000, "4", "32Gi", 110)
    assert (s1.warm_pods, s1.measured_pods) == (1_000, 10_000)
    s2 = SCENARIOS["s2"]
    assert (s2.nodes.count, s2.nodes.cpu, s2.nodes.memory) == (1_000, "32", "256Gi")
    assert (s2.jobs, s2.replicas, s2.clients) == (100, 100, 16)
    shapes = {
        name: (SCENARIOS[name].jobs, SCENARIOS[name].replicas) for name in SCENARIOS if name.startswith("s2-")
    }
    assert shapes == {
        "s2-10000x1": (10_000, 1),
        "s2-500x20": (500, 20),
        "s2-20x500": (20, 500),
        "s2-contended": (100, 100),
    }


def test_the_contended_variant_asks_for_110_percent_of_the_cpu() -> None:
    contended = SCENARIOS["s2-contended"]
    capacity = contended.nodes.count * int(contended.nodes.cpu)
    assert 1.09 <= contended.measured_pods / capacity <= 1.11


def test_scaling_shrinks_nodes_and_jobs_but_keeps_the_gang() -> None:
    small = workloads.scaled(SCENARIOS["s2-20x500"], 0.1)
    assert (small.nodes.count, small.jobs, small.replicas) == (100, 2, 500)
    assert workloads.scaled(SCENARIOS["s2"], 1) is SCENARIOS["s2"]


def test_the_job_manifest_is_a_valid_volcano_gang() -> None:
    manifest = workloads.job(SCENARIOS["s2"], "j00001")
    job = Job.model_validate(manifest)
    assert job.spec.min_available == 100
    assert job.spec.scheduler_name == "volcano"
    assert [t.replicas for t in job.spec.tasks] == [100]
