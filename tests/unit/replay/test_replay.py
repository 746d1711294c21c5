"""`phalanx replay`: a small trace whose every start can be worked out by hand, through the real core.

Two 8-GPU nodes. j1 (one node, 100 s) arrives at 0; j2 (both nodes, 50 s) at 1 and cannot start;
j3 (one node, 50 s) at 2; j4 (one node, 200 s) at 3. Volcano starts j3 at once and j4 when j3
ends, so j2 waits for j4; reservation backfill lets j3 (it ends by 100) but not j4 (it would not)
run before j2; a strict reservation lets neither.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.traces.generate import generate, render
from phalanx.cli import app
from phalanx.replay import engine, report, trace
from services.scheduler.core import parse_conf

pytestmark = pytest.mark.unit

GPU_NODE = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"}
WHOLE_NODE = {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "8"}
TRACES = Path(__file__).parents[3] / "benchmarks" / "traces"


def small() -> trace.Trace:
    def job(name: str, arrival: float, tasks: int, runtime: float) -> dict[str, object]:
        return {"name": name, "arrival": arrival, "tasks": tasks, "request": WHOLE_NODE, "runtime": runtime,
                "estimate": runtime, "class": "c"}  # fmt: skip

    return trace.parse(
        {
            "name": "by-hand",
            "nodes": [{"count": 2, "resources": GPU_NODE}],
            "jobs": [job("j1", 0, 1, 100), job("j2", 1, 2, 50), job("j3", 2, 1, 50), job("j4", 3, 1, 200)],
        }
    )


def starts(mode: str, estimates: str = "trace") -> dict[str, float | None]:
    conf = parse_conf((TRACES / f"{mode}.conf").read_text())
    result = engine.run(small(), conf, estimates=estimates)
    return {name: outcome.start for name, outcome in result.outcomes.items()}


def test_volcano_backfill_and_strict_orderings_start_jobs_when_worked_out_by_hand() -> None:
    assert starts("volcano") == {"j1": 0, "j2": 252, "j3": 2, "j4": 52}
    assert starts("backfill") == {"j1": 0, "j2": 100, "j3": 2, "j4": 150}
    assert starts("strict") == {"j1": 0, "j2": 100, "j3": 150, "j4": 150}


def test_with_exact_estimates_every_prediction_is_the_actual_start() -> None:
    result = engine.run(small(), parse_conf((TRACES / "backfill.conf").read_text()), estimates="exact")
    predicted = {name: o.predicted for name, o in result.outcomes.items() if o.predicted is not None}
    assert predicted == {"j2": 100, "j4": 150}
    figures = report.figures(result)
    assert figures.prediction_median == 0.0
    assert figures.predicted_share == 1.0


def test_without_estimates_nothing_is_reserved_and_volcano_order_follows() -> None:
    assert starts("backfill", "none") == starts("volcano")


def test_figures_per_queue_and_size() -> None:
    result = engine.run(small(), parse_conf((TRACES / "backfill.conf").read_text()))
    figures = report.figures(result)
    assert figures.makespan == 350  # j4 ends at 150 + 200
    # GPU-seconds held: 8*100 + 16*50 + 8*50 + 8*200 = 3600 of 16 GPUs x 350 s
    assert figures.utilization["default"] == pytest.approx(3600 / 5600)
    assert figures.waits["2-8"] == (3, pytest.approx((0 + 0 + 147) / 3), 147)
    assert figures.waits["9-32"] == (1, 99, 99)


def test_the_command_reports_and_adding_nodes_shortens_waits(tmp_path: Path) -> None:
    path = tmp_path / "small.json"
    path.write_text(json.dumps(trace.dump(small())))
    runner = CliRunner()
    plain = runner.invoke(app, ["replay", str(path), "--config", str(TRACES / "backfill.conf")])
    assert plain.exit_code == 0, plain.output
    assert "makespan 5.8 min" in plain.output
    assert "utilization: default 64.3%" in plain.output
    more = runner.invoke(
        app, ["replay", str(path), "--config", str(TRACES / "backfill.conf"), "--add-nodes", "2"]
    )
    assert "4 nodes" in more.output
    assert "makespan 4.2 min" in more.output  # j4 starts when j2 ends, at 51 s


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tasks": 0}, r"jobs\[1\] \(j2\)\.tasks: must be a whole number >= 1"),
        ({"runtime": -5}, r"jobs\[1\] \(j2\)\.runtime: must be a number of seconds > 0"),
        ({"queue": "nope"}, r"jobs\[1\] \(j2\)\.queue: 'nope' is not one of the trace's queues"),
        ({"request": {"cpu": "lots"}}, r"jobs\[1\] \(j2\)\.request"),
    ],
)
def test_a_malformed_trace_is_refused_naming_the_job_and_field(
    change: dict[str, object], message: str
) -> None:
    raw = trace.dump(small())
    raw["jobs"][1].update(change)
    with pytest.raises(trace.TraceError, match=message):
        trace.parse(raw)


def test_the_generator_makes_the_same_trace_from_the_same_seed() -> None:
    one, two = generate("philly", 3, 50, 4, 1.0), generate("philly", 3, 50, 4, 1.0)
    assert render(one) == render(two)
    assert render(one) != render(generate("philly", 4, 50, 4, 1.0))
    assert trace.parse(json.loads(render(one))).jobs == one.jobs
    assert max(j.tasks for j in one.jobs) > 1  # multi-node gangs among them
