"""The controller's Volcano metrics: PodGroups per queue and phase, finished jobs."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import REGISTRY

from services.controller.metrics import count_podgroups_of, job_finished

pytestmark = pytest.mark.unit


class Objects:
    def __init__(self, **kinds: list[dict[str, Any]]) -> None:
        self._kinds = kinds

    def all(self, kind: str) -> list[dict[str, Any]]:
        return self._kinds.get(kind, [])


def podgroup(queue: str | None, phase: str | None) -> dict[str, Any]:
    spec = {"queue": queue} if queue else {}
    return {"spec": spec, "status": {"phase": phase} if phase else {}}


def counted(phase: str, queue: str) -> float | None:
    return REGISTRY.get_sample_value(f"volcano_queue_pod_group_{phase}_count", {"queue_name": queue})


def test_podgroups_are_counted_per_queue_and_phase_at_scrape_time() -> None:
    count_podgroups_of(
        Objects(
            Queue=[{"metadata": {"name": "idle"}}, {"metadata": {"name": "team"}}],
            PodGroup=[
                podgroup("team", "Running"),
                podgroup("team", "Running"),
                podgroup("team", "Inqueue"),
                podgroup("team", None),  # no phase yet: Pending, as Volcano reads it
                podgroup(None, "Completed"),  # no queue: the default queue
            ],
        )
    )
    assert counted("running", "team") == 2
    assert counted("inqueue", "team") == 1
    assert counted("pending", "team") == 1
    assert counted("completed", "default") == 1
    assert counted("running", "idle") == 0  # a known queue without PodGroups shows zeros


def test_only_the_replica_that_reports_counts_so_a_sum_over_replicas_counts_each_podgroup_once() -> None:
    cluster = Objects(Queue=[{"metadata": {"name": "team"}}], PodGroup=[podgroup("team", "Running")])
    # Every replica caches the whole cluster; the one holding the cluster-scoped shard reports.
    holds_cluster_shard = [False, True, False]
    summed = 0.0
    for holds in holds_cluster_shard:
        count_podgroups_of(cluster, reports=lambda holds=holds: holds)  # type: ignore[misc]
        summed += counted("running", "team") or 0
        assert counted("running", "team") == (1 if holds else None)
    assert summed == 1
    count_podgroups_of(cluster)  # one replica, no shards to ask about: it always reports
    assert counted("running", "team") == 1


def test_completed_and_failed_jobs_are_counted_by_name_and_queue() -> None:
    labels = {"job_name": "ns/train", "queue_name": "team"}
    before = REGISTRY.get_sample_value("volcano_job_completed_phase_count", labels) or 0
    job_finished("Running", "ns", "train", "team")
    job_finished("Completed", "ns", "train", "team")
    job_finished("Failed", "ns", "train", "team")
    assert REGISTRY.get_sample_value("volcano_job_completed_phase_count", labels) == before + 1
    assert (REGISTRY.get_sample_value("volcano_job_failed_phase_count", labels) or 0) >= 1
