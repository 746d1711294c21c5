"""Runtime estimates: which source answers, how a class's history is learned, and which runs the
runtime records see starting and ending (services/scheduler/core/estimates.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from services.scheduler.core.estimates import (
    EXPECTED_RUNTIME,
    Estimate,
    estimate,
    format_instant,
    learn,
    parse_instant,
    runs_changed,
)
from services.scheduler.core.snapshot import Snapshot
from shared.volcano.keys import JOB_CLASS
from tests.unit.scheduler.builders import NOW, gang, request, running

pytestmark = pytest.mark.unit

HISTORY = {"default/resnet": (100.0, 200.0, 300.0, 400.0)}


@pytest.mark.parametrize(
    ("annotations", "task_fields", "expected"),
    [
        ({EXPECTED_RUNTIME: "2h30m"}, {"active_deadline_seconds": 60}, Estimate(9000.0, "annotation")),
        ({EXPECTED_RUNTIME: "90"}, {}, Estimate(90.0, "annotation")),
        (
            {EXPECTED_RUNTIME: "soon"},
            {"active_deadline_seconds": 60},
            Estimate(60.0, "activeDeadlineSeconds"),
        ),
        ({JOB_CLASS: "resnet"}, {}, Estimate(400.0, "learned")),
        ({JOB_CLASS: "bert"}, {}, Estimate(None, "unknown")),
        ({}, {"labels": {JOB_CLASS: "resnet"}}, Estimate(400.0, "learned")),
        ({}, {}, Estimate(None, "unknown")),
    ],
)
def test_the_first_source_with_an_answer_gives_the_estimate(
    annotations: dict[str, str], task_fields: dict[str, object], expected: Estimate
) -> None:
    g = gang("g", 2, request("1"), annotations=annotations, task_fields=task_fields)
    assert estimate(g, HISTORY) == expected


def test_learning_takes_a_high_percentile_of_the_last_twenty_runs_once_there_are_three() -> None:
    assert learn([10.0, 20.0]) is None
    assert learn([10.0, 20.0, 30.0]) == 30.0
    assert learn([1000.0] * 5 + [float(i) for i in range(1, 21)]) == 18.0  # the old runs are gone


def test_instants_round_trip_in_utc_seconds() -> None:
    moment = NOW + timedelta(seconds=90, milliseconds=600)
    assert format_instant(moment) == "2026-01-01T12:01:31Z"
    assert parse_instant(format_instant(moment)) == NOW + timedelta(seconds=91)
    assert parse_instant("not a time") is None


def test_a_run_is_seen_starting_once_and_ending_once_with_its_outcome() -> None:
    g = running(
        gang("train", 2, request("1"), annotations={EXPECTED_RUNTIME: "60s", JOB_CLASS: "resnet"}), ["n1"]
    )
    began = NOW - timedelta(seconds=50)
    g = replace(g, tasks=tuple(replace(t, started=began) for t in g.tasks))
    snapshot = Snapshot(nodes=(), queues=(), gangs=(g,), now=NOW)
    starts, ends = runs_changed(snapshot, {}, set())
    assert [(s.gang_uid, s.estimate, s.started_at, s.job_class) for s in starts] == [
        ("train", Estimate(60.0, "annotation"), began, "resnet")
    ]
    assert ends == []
    assert runs_changed(snapshot, {"train": began}, set()) == ([], [])

    done = replace(g, tasks=tuple(replace(t, status="Succeeded") for t in g.tasks))
    later = replace(snapshot, gangs=(done,), now=NOW + timedelta(seconds=15))
    starts, ends = runs_changed(later, {"train": began}, set())
    assert starts == []
    assert [(e.seconds, e.outcome, e.history_key) for e in ends] == [(65.0, "Succeeded", "default/resnet")]
    assert runs_changed(later, {"train": began}, {"train"}) == ([], [])

    failed = replace(done, tasks=(replace(done.tasks[0], status="Failed"), done.tasks[1]))
    _, ends = runs_changed(replace(later, gangs=(failed,)), {"train": began}, set())
    assert ends[0].outcome == "Failed"
