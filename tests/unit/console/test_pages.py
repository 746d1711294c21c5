"""What the console's pages say, from plain data: amounts, bars, heat, marks, escaping, the roll-up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.console import pages
from services.console.page_rows import JobDetail, JobRow, NodeView, QueueSummary, Verdict, roll_up

pytestmark = pytest.mark.unit

GIB = 1000 * 2**30
NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def queue(name: str, parent: str | None = None, **kwargs: object) -> QueueSummary:
    fields: dict[str, object] = {"capability": {}, "deserved": {}, "guarantee": {}, **kwargs}
    return QueueSummary(name, parent, 1, "Open", **fields)  # type: ignore[arg-type]


def job(phase: str = "Pending") -> JobRow:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return JobRow("u1", "team-a", "train", phase, "research", 3, now, now, "train-u1")


def test_amounts_read_as_cores_gib_and_counts() -> None:
    assert pages.amount("cpu", 2500) == "2.50"
    assert pages.amount("cpu", 3000) == "3"
    assert pages.amount("memory", 4 * GIB) == "4.0 GiB"
    assert pages.amount("nvidia.com/gpu", 2000) == "2"


def test_a_queue_above_its_deserved_share_is_marked_and_says_so() -> None:
    research = queue("research", capability={"cpu": 12000}, deserved={"cpu": 8000}, allocated={"cpu": 9000})
    html = pages.queues_page([research], {"cpu": 32000}, now=NOW)
    assert 'aria-label="cpu: 9 of 12, deserved 8"' in html
    assert 'class="fill over"' in html
    assert 'style="left:66.7%"' in html  # the deserved tick


def test_a_queue_without_capability_is_measured_against_the_cluster() -> None:
    html = pages.queues_page([queue("default", allocated={"cpu": 8000})], {"cpu": 32000}, now=NOW)
    assert 'aria-label="cpu: 8 of 32"' in html
    assert 'class="fill over"' not in html


def test_parents_hold_what_their_children_hold() -> None:
    queues = {
        "root": queue("root"),
        "eng": queue("eng", "root", allocated={"cpu": 1000}, running_gangs=1),
        "ml": queue("ml", "eng", allocated={"cpu": 2000}, pending_gangs=2),
    }
    rolled = {q.name: q for q in roll_up(queues)}
    assert rolled["root"].allocated == {"cpu": 3000}
    assert rolled["eng"].allocated == {"cpu": 3000}
    assert rolled["ml"].allocated == {"cpu": 2000}
    assert (rolled["root"].pending_gangs, rolled["root"].running_gangs) == (2, 1)


def test_a_parent_cycle_in_bad_data_does_not_loop() -> None:
    queues = {"a": queue("a", "b", allocated={"cpu": 1}), "b": queue("b", "a", allocated={"cpu": 1})}
    assert {q.name: q.allocated for q in roll_up(queues)} == {"a": {"cpu": 2}, "b": {"cpu": 2}}


def test_a_waiting_job_shows_the_verdict_escaped() -> None:
    verdict = Verdict("QueueCapabilityExceeded", "NotEnoughResources", "needs <cpu> & more", None)
    html = pages.job_page(JobDetail(job(), "g1", "Pending", [], verdict), [], [], [])
    assert "<strong>QueueCapabilityExceeded</strong> (NotEnoughResources)" in html
    assert "needs &lt;cpu&gt; &amp; more" in html


def test_a_running_job_has_no_blocker_even_with_an_old_verdict() -> None:
    verdict = Verdict("QueueCapabilityExceeded", "NotEnoughResources", "old", None)
    html = pages.job_page(JobDetail(job("Running"), "g1", "Running", [], verdict), [], [], [])
    assert 'id="why"' not in html


def test_the_timeline_shows_phase_changes() -> None:
    event = {
        "time": "2026-01-01T10:00:01.250Z",
        "data": {
            "service": "controller",
            "action": "phase-changed",
            "kind": "Job",
            "name": "train",
            "outcome": "done",
            "details": {"previous": "Pending", "phase": "Running"},
        },
    }
    html = pages.job_page(JobDetail(job("Running"), "g1", "Running", [], None), [], [], [event])
    assert "10:00:01.250" in html
    assert "controller.phase-changed Job train" in html
    assert "previous=Pending phase=Running" in html


def test_nodes_are_shaded_by_their_fullest_resource_and_marked_when_unusable() -> None:
    busy = NodeView("n1", {"cpu": 8000, "memory": 32 * GIB}, {"cpu": 6000, "memory": 4 * GIB}, False, True)
    cordoned = NodeView("n2", {"cpu": 8000, "memory": 32 * GIB}, {}, True, True)
    down = NodeView("n3", {"cpu": 8000, "memory": 32 * GIB}, {}, False, False)
    html = pages.nodes_page([busy, cordoned, down])
    assert 'class="cell heat-8"' in html  # 75% cpu rounds to 8 of 10
    assert "n1: 75% used" in html
    assert "cell heat-0 mark-cordoned" in html
    assert "cell heat-0 mark-notready" in html
    assert '<span class="badge">NotReady</span>' in html


def test_fragment_is_only_the_main_content() -> None:
    assert pages.layout("Jobs", "/jobs", "<h1>Jobs</h1>", fragment=True) == "<h1>Jobs</h1>"
    full = pages.layout("Jobs", "/jobs", "<h1>Jobs</h1>", fragment=False)
    assert '<a href="/jobs" aria-current=page>Jobs</a>' in full
    assert 'href="/static/console.css"' in full
    assert "http" not in full.split("<body>")[0]  # nothing from another host


def test_a_queues_share_over_the_last_hours_is_a_line_named_by_its_figures() -> None:
    now = datetime(2026, 1, 1, 12, tzinfo=UTC)
    samples = [(now - timedelta(hours=h), share) for h, share in ((7, 0.9), (5, 0.2), (3, 1.6), (0, 0.5))]
    html = pages.queues_page([queue("team")], {"cpu": 1000}, {"team": samples}, now=now, hours=6)
    assert "Share, last 6 h" in html
    assert 'role="img" aria-label="share over the last 6 hours: now 0.50, peak 1.60, low 0.20' in html
    # Across the 6-hour window on a 160-wide chart: 7 h ago is clipped to its left edge, 5 h ago at
    # 26.7, 3 h ago at 80, now at the right edge.
    points = html.split('points="')[1].split('"')[0].split()
    assert [p.split(",")[0] for p in points] == ["0.0", "26.7", "80.0", "160.0"]
    # The peak sets the chart's top, with a margin; the deserved share is a dashed rule below it.
    assert float(points[2].split(",")[1]) == pytest.approx(36 - 1.6 / 1.76 * 36, abs=0.1)
    assert 'class="share-deserved"' in html


def test_a_history_younger_than_the_window_fills_the_chart() -> None:
    now = datetime(2026, 1, 1, 12, tzinfo=UTC)
    samples = [(now - timedelta(minutes=m), 0.5) for m in (10, 5, 0)]
    html = pages.queues_page([queue("team")], {}, {"team": samples}, now=now, hours=6)
    assert 'aria-label="share over the last 10 minutes: now 0.50' in html
    points = html.split('points="')[1].split('"')[0].split()
    assert [p.split(",")[0] for p in points] == ["0.0", "80.0", "160.0"]


def test_a_queue_without_samples_says_so_and_one_sample_is_a_dot() -> None:
    now = datetime(2026, 1, 1, 12, tzinfo=UTC)
    assert "no samples" in pages.queues_page([queue("team")], {}, {}, now=now)
    html = pages.queues_page([queue("team")], {}, {"team": [(now, 0.5)]}, now=now)
    assert '<circle cx="160.0"' in html
    assert "polyline" not in html
