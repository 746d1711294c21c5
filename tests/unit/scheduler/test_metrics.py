"""Volcano's scheduler metrics as Prometheus would scrape them, from one planned cycle.

The pure core returns each queue's figures in the plan (core/figures.py); the shell's
`CycleMetrics` (services/scheduler/metrics.py) sets Volcano's gauges and counters from the plan
and the snapshot. These tests run both and read the values back from the registry, by the names
and labels Volcano's dashboards query.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from prometheus_client import REGISTRY

from services.scheduler.metrics import CycleMetrics, LeadershipWatch
from tests.unit.scheduler.builders import NOW, conf_with, gang, node, plan, queue, request, running, snapshot

pytestmark = pytest.mark.unit


def value(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


def test_queue_figures_are_volcanos_units_after_the_cycle() -> None:
    nodes = [node("n1", cpu="4", memory="8Gi")]
    gangs = [
        gang("placed", 2, request("1", "1Gi"), queue="team"),
        gang("waiting", 2, request("2", "1Gi"), queue="team"),
    ]
    queues = [queue("default"), queue("team", weight=3, capability={"cpu": "3"})]
    result = plan(nodes, gangs, queues)
    figures = {f.name: f for f in result.queues}
    assert figures["team"].allocated["cpu"] == 2000  # the placed gang, booked by this very cycle

    CycleMetrics().record(result, snapshot(nodes, gangs, queues), took_seconds=0.02, now=NOW)

    assert value("volcano_queue_allocated_milli_cpu", queue_name="team") == 2000
    assert value("volcano_queue_allocated_memory_bytes", queue_name="team") == 2 * 1024**3
    assert value("volcano_queue_request_milli_cpu", queue_name="team") == 6000
    assert value("volcano_queue_capacity_milli_cpu", queue_name="team") == 3000
    # The capability names no memory: no series rather than a zero that would read "nothing allowed".
    assert value("volcano_queue_capacity_memory_bytes", queue_name="team") is None
    assert value("volcano_queue_weight", queue_name="team") == 3
    assert value("volcano_queue_deserved_milli_cpu", queue_name="team") is not None
    assert value("volcano_queue_overused", queue_name="team") in (0, 1)
    assert value("volcano_unschedule_job_count") == 1
    assert value("volcano_unschedule_task_count", job_id="default/waiting") == 2


def test_attempts_count_pods_by_result_and_a_placed_gang_clears_its_unscheduled_series() -> None:
    nodes = [node("n1", cpu="2")]
    waiting = gang("gated", 1, request("4"))
    before_scheduled = value("volcano_schedule_attempts_total", result="scheduled") or 0
    before_unschedulable = value("volcano_schedule_attempts_total", result="unschedulable") or 0
    metrics = CycleMetrics()

    metrics.record(plan(nodes, [waiting]), snapshot(nodes, [waiting]), took_seconds=0.01, now=NOW)
    assert value("volcano_unschedule_task_count", job_id="default/gated") == 1
    fits = gang("gated", 1, request("1"))
    metrics.record(plan(nodes, [fits]), snapshot(nodes, [fits]), took_seconds=0.01, now=NOW)

    assert value("volcano_schedule_attempts_total", result="unschedulable") == before_unschedulable + 1
    assert value("volcano_schedule_attempts_total", result="scheduled") == before_scheduled + 1
    assert value("volcano_unschedule_task_count", job_id="default/gated") is None
    assert value("volcano_unschedule_job_count") == 0


def test_preemption_sets_victims_and_counts_an_attempt_per_preemptor() -> None:
    conf = conf_with("predicates", "nodeorder", actions="enqueue, allocate, preempt")
    nodes = [node("n1", cpu="4")]
    gangs = [
        running(gang("low", 2, request("2"), priority=1), ["n1"]),
        gang("high", 1, request("2"), priority=100),
    ]
    before = value("volcano_total_preemption_attempts") or 0
    result = plan(nodes, gangs, conf=conf)
    assert result.evictions

    CycleMetrics().record(result, snapshot(nodes, gangs), took_seconds=0.01, now=NOW)

    assert value("volcano_pod_preemption_victims") == len(result.evictions)
    assert value("volcano_total_preemption_attempts") == before + 1


def test_leadership_changes_are_counted_both_ways() -> None:
    before = {
        c: value("phalanx_scheduler_leadership_changes_total", change=c) or 0 for c in ("acquired", "lost")
    }
    watch = LeadershipWatch()
    for epoch in (None, 4, 4, None, 5, 6):
        watch.observe(epoch)
    assert value("phalanx_scheduler_leadership_changes_total", change="acquired") == before["acquired"] + 3
    assert value("phalanx_scheduler_leadership_changes_total", change="lost") == before["lost"] + 2
    assert value("phalanx_scheduler_leader") == 1


def test_a_bound_job_gets_volcanos_per_job_gauges_until_it_is_gone() -> None:
    nodes = [node("n1", cpu="4")]
    placed = gang("timed", 2, request("1"), queue="team")
    queues = [queue("default"), queue("team")]
    metrics = CycleMetrics()
    later = NOW + timedelta(seconds=3)
    metrics.record(
        plan(nodes, [placed], queues), snapshot(nodes, [placed], queues), took_seconds=0.01, now=later
    )

    labels = {"job_name": "timed", "queue": "team", "job_namespace": "default"}
    created = snapshot(nodes, [placed], queues).gangs[0].created
    duration = (later - created).total_seconds() * 1000
    assert value("volcano_e2e_job_scheduling_duration", **labels) == pytest.approx(duration)
    assert value("volcano_e2e_job_scheduling_start_time", **labels) == created.timestamp()
    assert value("volcano_e2e_job_scheduling_last_time", **labels) == later.timestamp()

    metrics.record(plan(nodes, [], queues), snapshot(nodes, [], queues), took_seconds=0.01, now=later)
    assert value("volcano_e2e_job_scheduling_duration", **labels) is None
    assert value("volcano_e2e_job_scheduling_last_time", **labels) is None


def test_a_waiting_job_shows_its_predicted_start_until_it_starts() -> None:
    from dataclasses import replace

    from services.scheduler.core import parse_conf

    conf = parse_conf(
        'actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: gang}, {name: predicates}]\n'
        "configurations:\n- name: backfill\n  arguments: {reservation: backfill}\n"
    )
    nodes = [node("n1", cpu="4")]
    estimate = {"phalanx.io/expected-runtime": "60s"}
    busy = running(gang("busy", 1, request("4"), annotations=estimate), ["n1"])
    busy = replace(busy, tasks=tuple(replace(t, started=NOW - timedelta(seconds=20)) for t in busy.tasks))
    waiting = gang("next", 1, request("4"), annotations=estimate)
    metrics = CycleMetrics()
    metrics.record(
        plan(nodes, [busy, waiting], conf=conf), snapshot(nodes, [busy, waiting]), took_seconds=0.01, now=NOW
    )

    labels = {"job_name": "next", "queue": "default", "job_namespace": "default"}
    assert value("phalanx_job_predicted_start_time", **labels) == (NOW + timedelta(seconds=40)).timestamp()
    assert value("phalanx_scheduler_reserved_gangs") == 1
    metrics.record(plan(nodes, [waiting], conf=conf), snapshot(nodes, [waiting]), took_seconds=0.01, now=NOW)
    assert value("phalanx_job_predicted_start_time", **labels) is None
    assert value("phalanx_scheduler_reserved_gangs") == 0
