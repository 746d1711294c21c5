"""The runner's own decisions: polling within/stays, result lines, files that do not parse."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.scenario import ClusterSpec, StackError, run_files
from phalanx.scenario.expectations import Expectation
from phalanx.scenario.probes import Probe
from phalanx.scenario.report import Report, Result, ScenarioReport
from phalanx.scenario.runner import evaluate, expand_paths

pytestmark = pytest.mark.unit


class FakeTime:
    """A clock that moves only when the runner sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def probe_failing_until(label: str, time: FakeTime, at: float | None) -> Probe:
    """Holds from `at` seconds on (never when None)."""
    return Probe(label, lambda: [] if at is not None and time.now >= at else [f"not yet {label}"])


def probe_failing_from(label: str, time: FakeTime, at: float) -> Probe:
    return Probe(label, lambda: ["broke"] if time.now >= at else [])


def test_within_passes_once_each_condition_held() -> None:
    time = FakeTime()
    probes = [probe_failing_until("a", time, 1.0), probe_failing_until("b", time, 2.5)]
    results = evaluate(probes, Expectation(within=10), time.clock, time.sleep)
    assert results == [Result("a", True), Result("b", True)]
    assert 2.5 <= time.now < 2.8  # it stopped polling once both had held


def test_within_fails_with_the_last_observation() -> None:
    time = FakeTime()
    results = evaluate([probe_failing_until("a", time, None)], Expectation(within=1), time.clock, time.sleep)
    assert results == [Result("a", False, "not yet a (within 1s)")]
    assert time.now == pytest.approx(1.0)


def test_default_within_is_thirty_seconds() -> None:
    time = FakeTime()
    evaluate([probe_failing_until("a", time, None)], Expectation(), time.clock, time.sleep)
    assert time.now == pytest.approx(30.0)


def test_stays_fails_at_the_first_violation() -> None:
    time = FakeTime()
    probes = [probe_failing_from("a", time, 1.0), probe_failing_from("b", time, 99.0)]
    results = evaluate(probes, Expectation(stays=3), time.clock, time.sleep)
    assert results[0].passed is False
    assert results[0].detail == "broke (after 1.0s of 3s)"
    assert results[1] == Result("b", True)
    assert time.now == pytest.approx(3.0)  # the others were watched to the end


def test_stays_starts_once_every_condition_holds() -> None:
    time = FakeTime()
    probes = [probe_failing_until("a", time, 0.5), probe_failing_until("b", time, 1.0)]
    results = evaluate(probes, Expectation(stays=3), time.clock, time.sleep)
    assert results == [Result("a", True), Result("b", True)]
    assert time.now == pytest.approx(4.0)  # 1s to settle, then 3s held


def test_stays_fails_what_never_comes_to_hold() -> None:
    time = FakeTime()
    probes = [probe_failing_until("a", time, None), probe_failing_until("b", time, 0.0)]
    results = evaluate(probes, Expectation(stays=2), time.clock, time.sleep)
    assert results == [Result("a", False, "not yet a (never held within 5s)"), Result("b", True)]


def test_stays_polls_about_five_times_a_second() -> None:
    time, calls = FakeTime(), []
    probe = Probe("a", lambda: calls.append(time.now) or [])
    evaluate([probe], Expectation(stays=2), time.clock, time.sleep)
    assert 11 <= len(calls) <= 13  # one settling check, then every 0.2s for 2s
    assert calls[-1] == pytest.approx(2.0)


def test_a_probe_that_cannot_observe_counts_as_not_holding() -> None:
    def broken() -> list[str]:
        raise RuntimeError("connection reset")

    time = FakeTime()
    results = evaluate([Probe("a", broken)], Expectation(within=0.4), time.clock, time.sleep)
    assert results[0].passed is False
    assert "cannot observe: RuntimeError: connection reset" in results[0].detail


def test_result_lines_and_closing_line() -> None:
    report = Report(
        (
            ScenarioReport(
                "s.yaml",
                "s",
                (
                    Result("jobs[0] default/j1 phase=Running", True),
                    Result(
                        "jobs[1] default/j2 phase=Running",
                        False,
                        "expected phase Running, observed Pending",
                    ),
                ),
            ),
        )
    )
    assert [r.line() for r in report.scenarios[0].results] == [
        "  ✓ jobs[0] default/j1 phase=Running",
        "  ✗ jobs[1] default/j2 phase=Running: expected phase Running, observed Pending",
    ]
    assert report.closing_line() == "1 passed, 1 failed"
    assert not report.ok


class UnreachableStack:
    kubeconfig = Path("/nonexistent/kubeconfig")
    simulator_url = "http://127.0.0.1:1"

    def __init__(self) -> None:
        self.resets: list[ClusterSpec] = []

    def reset(self, cluster: ClusterSpec, scheduler_conf: str | None) -> None:
        self.resets.append(cluster)
        raise StackError("connection refused")


GOOD = "name: {name}\ncluster: {{nodes: [{{name: n1}}]}}\nsteps: [{{sleep: 1s}}]\n"


def test_files_that_do_not_parse_fail_without_touching_the_stack(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(GOOD.format(name="x").replace("sleep", "slep"))
    stack, lines = UnreachableStack(), []
    report = run_files([tmp_path / "bad.yaml"], stack, emit=lines.append)
    assert stack.resets == []
    assert lines == [
        str(tmp_path / "bad.yaml"),
        "  ✗ steps[0]: unknown key 'slep'",
        "0 passed, 1 failed",
    ]
    assert not report.ok


def test_a_stack_that_cannot_reset_fails_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD.format(name="a"))
    lines: list[str] = []
    report = run_files([tmp_path], UnreachableStack(), emit=lines.append)
    assert lines[1] == "  ✗ fresh cluster: connection refused"
    assert lines[-1] == "0 passed, 1 failed"
    assert report.failed == 1


def test_scenario_names_are_unique_within_a_folder(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD.format(name="same"))
    (tmp_path / "b.yaml").write_text(GOOD.format(name="same"))
    lines: list[str] = []
    run_files([tmp_path], UnreachableStack(), emit=lines.append)
    assert f"  ✗ name 'same' is already used by {tmp_path / 'a.yaml'}" in lines


def test_folders_expand_to_their_yaml_files_in_order(tmp_path: Path) -> None:
    for name in ("b.yaml", "a.yml", "notes.txt"):
        (tmp_path / name).write_text("")
    assert expand_paths([tmp_path]) == [tmp_path / "a.yml", tmp_path / "b.yaml"]
