"""`phalanx replay` with fairshare: the decayed usage is carried from one cycle to the next as the
leader carries it, so a queue that held the cluster earlier yields when both queues wait; and the
fairness figure (Jain's index of share over entitlement) recorded in benchmarks/results/fairness.md.

One 8-GPU node. a-early (whole node, 2 h) arrives at 0 with nothing else to run; a-late and
b-late (whole node, 1 h each) arrive while it runs. When a-early ends both wait for the one node:
drf alone takes queues by name (a-late first), fairshare takes b, which has used nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from phalanx.cli import app
from phalanx.replay import engine, fairness, trace
from services.scheduler.core import parse_conf

pytestmark = pytest.mark.unit

TRACES = Path(__file__).parents[3] / "benchmarks" / "traces"
NODE = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"}


def job(
    name: str, queue: str, arrival: float, runtime: float, request: dict[str, str] = NODE
) -> dict[str, object]:
    return {
        "name": name,
        "queue": queue,
        "arrival": arrival,
        "tasks": 1,
        "request": request,
        "runtime": runtime,
    }


def two_queues() -> trace.Trace:
    return trace.parse(
        {
            "name": "yesterday",
            "nodes": [{"count": 1, "resources": NODE}],
            "queues": [{"name": "a", "weight": 1}, {"name": "b", "weight": 1}],
            "jobs": [
                job("a-early", "a", 0, 7200),
                job("a-late", "a", 3600, 3600),
                job("b-late", "b", 3601, 3600),
            ],
        }
    )


def starts(conf_file: str) -> dict[str, float | None]:
    result = engine.run(two_queues(), parse_conf((TRACES / conf_file).read_text()))
    return {name: outcome.start for name, outcome in result.outcomes.items()}


def test_the_queue_that_used_the_node_earlier_yields_when_both_wait() -> None:
    assert starts("fairshare.conf") == {"a-early": 0, "b-late": 7200, "a-late": 10800}
    assert starts("volcano.conf") == {"a-early": 0, "a-late": 7200, "b-late": 10800}


def test_jain_index_is_one_when_shares_follow_weights_and_a_third_when_one_of_three_takes_all() -> None:
    assert fairness.jain([0.5, 0.5, 0.5]) == pytest.approx(1.0)
    assert fairness.jain([3.0, 0.0, 0.0]) == pytest.approx(1 / 3)


def test_the_day_index_counts_each_queue_against_its_weight() -> None:
    result = engine.run(two_queues(), parse_conf((TRACES / "fairshare.conf").read_text()))
    measured = fairness.measure(result, horizon=4 * 3600)
    # a held the node 3 of the 4 hours, b 1: shares 3/4 and 1/4 against entitlements 1/2 each
    assert measured.day_share == pytest.approx({"a": 0.75, "b": 0.25})
    assert measured.day_index == pytest.approx(fairness.jain([1.5, 0.5]))


def test_the_replay_command_reports_the_fairness_index() -> None:
    result = CliRunner().invoke(
        app, ["replay", str(TRACES / "philly-like.json"), "--config", str(TRACES / "proportion.conf")]
    )
    assert result.exit_code == 0, result.output
    assert (
        "fairness (Jain's index of share over entitlement, first day): 0.768, hourly mean 0.672"
        in result.output
    )
