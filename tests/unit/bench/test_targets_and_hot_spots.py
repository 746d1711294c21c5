"""The results file says, per issue #15 target, whether it was met or by how much it was missed
(and when the machine itself could not reach it), and where each service's CPU went."""

from __future__ import annotations

import math

import pytest

from phalanx.bench import targets
from phalanx.bench.profiling import OUTSIDE, hot_spots

pytestmark = pytest.mark.unit

S2 = {
    targets.PODS_PER_S: 256.0,
    targets.ALL_BOUND_S: 39.07,
    targets.CPU_MS_PER_POD: 7.26,
    targets.P99_LATENCY_S: 1.68,
    targets.PARTIAL_GANGS: 0.0,
}


def _row(lines: list[str], figure: str) -> str:
    return next(line for line in lines if line.startswith(f"| {figure} |"))


def test_each_target_is_met_or_missed_by_its_factor() -> None:
    lines = targets.lines("s2", S2, ceiling_pods_per_s=2000.0)
    assert "met" in _row(lines, targets.P99_LATENCY_S).split("|")[-2]
    close = targets.lines("s2", {**S2, targets.P99_LATENCY_S: 2.09}, ceiling_pods_per_s=2000.0)
    assert "missed by a factor of 1.04" in _row(close, targets.P99_LATENCY_S)
    assert "met" in _row(lines, targets.PARTIAL_GANGS).split("|")[-2]
    assert "missed by a factor of 3.9" in _row(lines, targets.ALL_BOUND_S)
    assert "missed by a factor of 3.6" in _row(lines, targets.CPU_MS_PER_POD)
    throughput = _row(lines, targets.PODS_PER_S)
    assert "missed by a factor of 3.9; the ceiling in this run was 2,000 pods/s" in throughput


def test_a_throughput_target_beyond_the_machine_says_so() -> None:
    throughput = _row(targets.lines("s2", S2, ceiling_pods_per_s=971.3), targets.PODS_PER_S)
    assert (
        "beyond this machine: its ceiling in this run was 971 pods/s, Phalanx reached 0.26 of it"
        in throughput
    )


def test_a_partially_bound_gang_is_never_met() -> None:
    lines = targets.lines("s1", {targets.PODS_PER_S: 700.0, targets.PARTIAL_GANGS: 1.0}, None)
    assert _row(lines, targets.PODS_PER_S).endswith("| met |")
    assert _row(lines, targets.PARTIAL_GANGS).endswith("| missed: 1 |")
    assert _row(lines, targets.CPU_MS_PER_POD).endswith("| not measured |")


def test_scenarios_without_targets_and_scaled_runs() -> None:
    assert targets.lines("topo", S2, None) == []
    assert "At 0.3 of the scenario's size" in "\n".join(targets.lines("s2", S2, None, scale=0.3))
    assert targets.verdict(targets.TARGETS["s2"][0], math.nan, None) == "not measured"


ENTRY = ";".join(
    [
        "<module> (services/controller/__main__.py:24)",
        "run_service (shared/runtime.py:121)",
        "Runner.run (asyncio/runners.py:118)",
    ]
)
SEND = "request (shared/kube/client.py:117);_send (shared/kube/client.py"


def test_samples_are_charged_to_the_deepest_function_of_ours_below_the_loop() -> None:
    collapsed = "\n".join(
        [
            f"{ENTRY};{SEND}:191);write (aiohttp/x.py:1) 6",
            f"{ENTRY};{SEND}:200) 2",
            f"{ENTRY};decode (shared/messages/envelope.py:100) 1",
            f"{ENTRY} 1",  # the loop polling: not the entry point's cost
            "garbage line",
        ]
    )
    assert hot_spots(collapsed) == [
        ("_send (shared/kube/client.py)", 0.8),
        ("decode (shared/messages/envelope.py)", 0.1),
        (OUTSIDE, 0.1),
    ]
    assert hot_spots(collapsed, top=1) == [("_send (shared/kube/client.py)", 0.8)]
    assert hot_spots("") == []
