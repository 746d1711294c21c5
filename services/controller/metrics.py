"""Shell: the controller's Prometheus metrics, with the names Volcano's controller manager uses.

- `volcano_queue_pod_group_<phase>_count{queue_name}`: counted from the controller's cache when
  Prometheus scrapes, so the figure is always the cache's truth and no event can leave it stale.
  Every replica's cache holds the whole cluster, so only the replica holding the cluster-scoped
  shard reports them: the others' would count each PodGroup again under `sum`.
- `volcano_job_completed_phase_count` / `volcano_job_failed_phase_count{job_name,queue_name}`:
  counted when a job's phase record (jobs.py) moves to Completed or Failed.
- `volcano_controller_job_to_pod_creation_latency_milliseconds`: from the Job's creation to each of
  its pods created.

app.py hands the cache over with `count_podgroups_of(cache)`; docs/observability.md lists them all.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any, Protocol

from prometheus_client import REGISTRY, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import INF

from shared.metrics import BareCounter
from shared.volcano.objects import JobObject, QueueObject

# PodGroup phases Volcano's queue controller counts, and the word each has in the metric's name.
PODGROUP_PHASES = {
    "Inqueue": "inqueue",
    "Pending": "pending",
    "Running": "running",
    "Unknown": "unknown",
    "Completed": "completed",
}

# Volcano's job controller counts a job each time it reaches Completed or Failed.
JOB_COMPLETED, JOB_FAILED = (
    BareCounter(f"volcano_job_{word}_phase_count", f"Number of job {word} phase", ["job_name", "queue_name"])
    for word in ("completed", "failed")
)
JOB_TO_POD_CREATION = Histogram(
    "volcano_controller_job_to_pod_creation_latency_milliseconds",
    "Latency from VCJob creation to pod created in milliseconds",
    buckets=(*(5 * 2**i for i in range(15)), INF),
)
# The partial-gang guard: decisions the controller would not carry out, so that a deposed or
# stale scheduler never binds part of a gang. `reason`: the lease check's (docs/leadership),
# `stale` or `superseded`.
DECISIONS_REFUSED = Counter(
    "phalanx_controller_decisions_refused",
    "Scheduler decisions refused: from a scheduler no longer holding the lease, older than one applied, "
    "or superseded by a newer decision of the gang (skipped unread).",
    ["reason"],
)


class _Objects(Protocol):
    def all(self, kind: str) -> list[dict[str, Any]]: ...


class PodGroupCounts(Collector):
    """PodGroups per queue and phase, read from the cache at each scrape (0 for a known queue)."""

    def __init__(self) -> None:
        self.cache: _Objects | None = None
        self.reports: Callable[[], bool] = lambda: True

    def collect(self) -> Iterator[Metric]:
        tally: Tally[tuple[str, str]] = Tally()
        queues: set[str] = set()
        if self.cache is not None and self.reports():
            queues = {QueueObject(q).name for q in self.cache.all("Queue")}
            for podgroup in self.cache.all("PodGroup"):
                queue = (podgroup.get("spec") or {}).get("queue") or "default"
                phase = (podgroup.get("status") or {}).get("phase") or "Pending"
                tally[(queue, phase)] += 1
                queues.add(queue)
        for phase, word in PODGROUP_PHASES.items():
            family = GaugeMetricFamily(
                f"volcano_queue_pod_group_{word}_count",
                f"The number of {phase} PodGroup in this queue",
                labels=["queue_name"],
            )
            for queue in sorted(queues):
                family.add_metric([queue], tally[(queue, phase)])
            yield family


_PODGROUP_COUNTS = PodGroupCounts()
REGISTRY.register(_PODGROUP_COUNTS)


def count_podgroups_of(cache: _Objects, *, reports: Callable[[], bool] = lambda: True) -> None:
    """Count PodGroups from `cache` from now on (one controller per process), at the scrapes when
    `reports()` says this replica is the one that reports them; at the others, no sample."""
    _PODGROUP_COUNTS.cache = cache
    _PODGROUP_COUNTS.reports = reports


def job_finished(phase: str, namespace: str, name: str, queue: str) -> None:
    """A job's phase record moved to `phase`: count it if it is Completed or Failed."""
    counter = {"Completed": JOB_COMPLETED, "Failed": JOB_FAILED}.get(phase)
    if counter is not None:
        counter.inc(1, f"{namespace}/{name}", queue)


def pod_created(job: dict[str, Any], now: datetime) -> None:
    created = JobObject(job).creation_timestamp
    if not created:
        return
    try:
        since = datetime.fromisoformat(str(created).replace("Z", "+00:00"))
    except ValueError:
        return
    JOB_TO_POD_CREATION.observe(max(0.0, (now - since).total_seconds() * 1000))
