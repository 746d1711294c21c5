"""`phalanx bench` end to end at a hundredth of S2's size: the harness starts its own stack, the
gang is bound whole, and the results file carries the figures a reader compares."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.bench import report, runner, workloads

pytestmark = pytest.mark.e2e


def test_a_scaled_down_s2_run_binds_every_gang_whole_and_writes_its_results(tmp_path: Path) -> None:
    scenario = workloads.scaled(workloads.SCENARIOS["s2"], 0.01)  # 10 nodes, one Job of 100 pods
    result = runner.run(scenario, runner.RunSettings(timeout_s=90, stall_s=30), say=lambda _: None)

    figures = result.figures
    assert figures.pods_created == figures.pods_bound == 100
    assert (figures.gangs_whole, figures.gangs_partial) == (1, 0)
    assert figures.pod_latency.p50 > 0
    assert result.api_writes.get("POST pods/binding") == 100
    assert result.cpu_seconds["controller"] > 0
    assert result.cpu_seconds["scheduler"] > 0
    assert result.jetstream_messages > 0
    assert result.postgres.transactions > 0
    # Read from the services' own /metrics over the run: the scheduler bound the 100 pods.
    assert result.service_metrics["scheduler:phalanx_scheduler_placed_pods_total"] >= 100
    assert result.service_metrics["scheduler:volcano_e2e_scheduling_latency_milliseconds_count"] >= 1
    assert result.service_metrics["controller:phalanx_kube_api_request_duration_seconds_count"] >= 100

    written = report.write(result, tmp_path)
    assert written.name == "bench-s2-scaled-0.01.md"
    text = written.read_text()
    assert "| gangs: whole / not placed / **partially bound** (of 1) | 1 / 0 / **0** |" in text
    assert "CPU ms per pod" in text
    assert "## From the services' /metrics" in text
