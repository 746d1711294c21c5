"""The ceiling creates the same pods Phalanx's run makes, and the results file gives Phalanx's
throughput as a fraction of it (issue #15)."""

from __future__ import annotations

import pytest

from phalanx.bench import ceiling, figures, report, runner
from phalanx.bench.probes import PostgresCounters
from phalanx.bench.workloads import SCENARIOS, job_of_pod, scaled

pytestmark = pytest.mark.unit
ENVIRONMENT = ("cpu", "cores", "memory", "os", "python", "nats-server", "postgresql", "phalanx")


def test_the_ceiling_makes_the_pods_phalanx_makes_by_name() -> None:
    jobs = scaled(SCENARIOS["s2"], 0.02)  # 2 Jobs of 100
    names = ceiling.pod_names(jobs)
    assert len(names) == jobs.measured_pods == 200
    assert {job_of_pod(f"bench/{name}") for name in names} == {"j00000", "j00001"}
    singles = ceiling.pod_names(scaled(SCENARIOS["s1"], 0.001))
    assert singles == [f"pod-{i:05d}" for i in range(10)]


def result(phalanx_seconds: float, ceiling_pods_per_s: float | None) -> runner.Result:
    scenario = scaled(SCENARIOS["s1"], 0.01)  # 100 single pods
    created = {f"bench/pod-{i:05d}": 0.0 for i in range(100)}
    bound = {key: phalanx_seconds for key in created}
    measured = figures.compute(
        started=0.0,
        created=created,
        bound=bound,
        pods_expected=100,
        gang_of=lambda key: key,
        gang_minimum=dict.fromkeys(created, 1),
    )
    return runner.Result(
        scenario=scenario,
        settings=runner.RunSettings(),
        figures=measured,
        cpu_seconds={"scheduler": 1.0},
        api_writes={},
        jetstream_messages=0,
        postgres=PostgresCounters(0, 0),
        create_failures=0,
        environment=dict.fromkeys(
            ("cpu", "cores", "memory", "os", "python", "nats-server", "postgresql", "phalanx"), "?"
        ),
        ceiling=None
        if ceiling_pods_per_s is None
        else ceiling.Ceiling(100, 100 / ceiling_pods_per_s, ceiling_pods_per_s, 0.1, 0.1),
    )


def test_the_results_give_phalanx_as_a_fraction_of_the_ceiling() -> None:
    measured = result(phalanx_seconds=2.0, ceiling_pods_per_s=200.0)  # 50 pods/s against 200
    assert measured.ceiling_ratio == pytest.approx(0.25)
    rendered = report.render(measured)
    assert "| **Phalanx's pods/s as a fraction of the ceiling** | **0.25** |" in rendered
    assert "| ceiling: pods/s, binds ÷ (last bind - first create) | 200.0 |" in rendered


def test_without_a_ceiling_the_results_say_nothing_of_one() -> None:
    measured = result(phalanx_seconds=2.0, ceiling_pods_per_s=None)
    assert measured.ceiling_ratio is None
    assert "ceiling" not in report.render(measured)
