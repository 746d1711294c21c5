"""The benchmark reads figures from the services' own /metrics: Prometheus text summed per series,
and the report's section built from the counters' differences over the run."""

from __future__ import annotations

import pytest

from phalanx.bench.probes import parse_totals
from phalanx.bench.report import service_metrics_lines

pytestmark = pytest.mark.unit

TEXT = """# HELP phalanx_kube_api_request_duration_seconds Time of one request.
# TYPE phalanx_kube_api_request_duration_seconds histogram
phalanx_kube_api_request_duration_seconds_count{verb="create",resource="pods"} 30.0
phalanx_kube_api_request_duration_seconds_count{verb="create",resource="pods/binding"} 10.0
phalanx_kube_api_request_duration_seconds_sum{verb="create",resource="pods"} 0.5
volcano_e2e_scheduling_latency_milliseconds_count 4.0
"""


def test_series_are_summed_over_their_labels() -> None:
    totals = parse_totals(TEXT)
    assert totals["phalanx_kube_api_request_duration_seconds_count"] == 40.0
    assert totals["phalanx_kube_api_request_duration_seconds_sum"] == 0.5
    assert totals["volcano_e2e_scheduling_latency_milliseconds_count"] == 4.0
    assert not any(name.startswith("#") for name in totals)


def test_the_report_gives_cycles_and_mean_latencies_from_the_counters() -> None:
    lines = service_metrics_lines(
        {
            "scheduler:volcano_e2e_scheduling_latency_milliseconds_count": 4.0,
            "scheduler:volcano_e2e_scheduling_latency_milliseconds_sum": 100.0,
            "scheduler:phalanx_scheduler_placed_pods_total": 200.0,
            "controller:phalanx_kube_api_request_duration_seconds_count": 40.0,
            "controller:phalanx_kube_api_request_duration_seconds_sum": 0.5,
        }
    )
    text = "\n".join(lines)
    assert "| scheduling cycles (volcano_e2e_scheduling_latency_milliseconds) | 4 |" in text
    assert "| mean cycle | 25.0 ms |" in text
    assert "| pods bound by decisions (phalanx_scheduler_placed_pods_total) | 200 |" in text
    assert "| mean controller API request | 12.5 ms |" in text
    assert service_metrics_lines({}) == []
