"""Where a benchmark's writes went: the kind a subject is counted under (phalanx/bench/breakdown.py)."""

from __future__ import annotations

import pytest

from phalanx.bench.breakdown import Breakdown, minus, report_lines, subject_kind

pytestmark = pytest.mark.unit


def test_a_subject_is_counted_by_its_leading_tokens_and_a_decision_by_its_type() -> None:
    assert subject_kind("cluster.pod.bench.pod-00001", b"{}") == "cluster.pod"
    assert subject_kind("audit.scheduler.placed.bench.pod-00001", b"{}") == "audit.scheduler.placed"
    assert subject_kind("jobs.phase.bench.j00001", b"{}") == "jobs.phase"
    placed = b'{"type": "phalanx.decisions.gang.placed.v1", "data": {}}'
    assert subject_kind("decisions.bench.pod-00001", placed) == "decisions gang.placed"
    assert subject_kind("decisions.bench.pod-00001", b"not json") == "decisions ?"


def test_the_tables_list_only_what_changed_largest_first_per_pod() -> None:
    rows = minus({"pods": 50, "decisions": 30, "queues": 1}, {"pods": 10, "queues": 1})
    assert rows == {"pods": 40, "decisions": 30}
    lines = report_lines(Breakdown(rows=rows, messages={}), pods=10)
    assert lines[2:4] == ["| pods | 40 | 4.00 |", "| decisions | 30 | 3.00 |"]
