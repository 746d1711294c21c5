"""`phalanx replay` with fairshare shaping proportion's deserved share, and the contended trace.

One 8-GPU node, queues a and b of equal weight. a floods it alone for two hours (eight 1-GPU jobs
of 2 h, eight more waiting); then b arrives with sixteen 1-GPU jobs. Proportion splits the node
four and four from then on; with `deservedByUsage` a, having had the node, deserves less and b
more, so over the first four hours the shares are closer to the weights. The shipped contended
trace is what its documented generator makes from its seed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.traces.generate import render
from benchmarks.traces.generate_contended import generate
from phalanx.replay import engine, fairness, trace
from services.scheduler.core import parse_conf
from tests.unit.replay.test_fairness_replay import NODE, job

pytestmark = pytest.mark.unit

TRACES = Path(__file__).parents[3] / "benchmarks" / "traces"
GPU = {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"}
HOUR = 3600.0


def flood_then_both() -> trace.Trace:
    jobs = [job(f"a-night-{i}", "a", 0, 2 * HOUR, GPU) for i in range(8)]
    jobs += [job(f"a-more-{i}", "a", 1, HOUR, GPU) for i in range(8)]
    jobs += [job(f"b-{i}", "b", 2 * HOUR, HOUR, GPU) for i in range(16)]
    return trace.parse(
        {
            "name": "flood",
            "nodes": [{"count": 1, "resources": NODE}],
            "queues": [{"name": "a", "weight": 1}, {"name": "b", "weight": 1}],
            "jobs": jobs,
        }
    )


def measured(conf_file: str) -> fairness.Fairness:
    result = engine.run(flood_then_both(), parse_conf((TRACES / conf_file).read_text()))
    assert not result.stuck
    return fairness.measure(result, horizon=4 * HOUR)


def test_the_queue_that_flooded_deserves_less_once_the_other_arrives() -> None:
    instantaneous = measured("proportion.conf")
    shaped = measured("fairshare-deserved.conf")
    assert shaped.day_share["b"] > instantaneous.day_share["b"]
    assert shaped.day_index > instantaneous.day_index


def test_the_shipped_contended_trace_is_what_its_generator_makes_from_its_seed() -> None:
    made = generate(seed=5, nodes=16, flood="nlp", night=8.0, night_load=2.0, day_load=2.0, day_end=18.0)
    shipped = (TRACES / "contended-like.json").read_text()
    assert render(made) == shipped
    assert json.loads(shipped)["jobs"][0]["queue"] == "nlp"  # the flood starts the night alone
