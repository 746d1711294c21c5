"""Shell: the scheduler's Prometheus metrics, Volcano's names first, then Phalanx's own.

The cycle loop (cycle_loop.py) calls `record_cycle` after each committed cycle with the plan the
pure core returned and the snapshot it planned on; every figure here comes from those two, so the
core stays free of metrics. Names, types, labels and buckets of the `volcano_*` metrics are
Volcano's (pkg/scheduler/metrics), so its dashboards and alerts read Phalanx unchanged; units are
Volcano's too (milli-CPU, bytes, milliseconds). docs/observability.md lists them all.
"""

from __future__ import annotations

import time
from datetime import datetime

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.utils import INF

from services.scheduler.core.plan import PREEMPT, RECLAIM, CyclePlan, QueueFigures
from services.scheduler.core.snapshot import OCCUPYING_STATUSES, SUCCEEDED, GangInfo, Snapshot
from shared.domain.resources import CPU, MEMORY, Resources
from shared.metrics import BareCounter


def _exponential(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Prometheus' ExponentialBuckets, which Volcano's histograms use."""
    return (*(start * factor**i for i in range(count)), INF)


E2E_SCHEDULING_LATENCY = Histogram(
    "volcano_e2e_scheduling_latency_milliseconds",
    "E2e scheduling latency in milliseconds (scheduling algorithm + binding)",
    buckets=_exponential(5, 2, 15),
)
E2E_JOB_SCHEDULING_LATENCY = Histogram(
    "volcano_e2e_job_scheduling_latency_milliseconds",
    "E2e job scheduling latency in milliseconds",
    buckets=_exponential(32, 2, 10),
)
SCHEDULE_ATTEMPTS = Counter(
    "volcano_schedule_attempts",
    "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
    "scheduled, while 'error' means an internal scheduler problem.",
    ["result"],
)
PREEMPTION_VICTIMS = Gauge("volcano_pod_preemption_victims", "Number of selected preemption victims")
PREEMPTION_ATTEMPTS = BareCounter(
    "volcano_total_preemption_attempts", "Total preemption attempts in the cluster till now"
)
UNSCHEDULE_TASK_COUNT = Gauge(
    "volcano_unschedule_task_count", "Number of tasks could not be scheduled", ["job_id"]
)
UNSCHEDULE_JOB_COUNT = Gauge("volcano_unschedule_job_count", "Number of jobs could not be scheduled")
UNDERFILLED_GANGS = Gauge(
    "phalanx_scheduler_underfilled_gangs",
    "Gangs holding resources with fewer members than their minimum after the last cycle (a member "
    "failed or was evicted); the optional release rule frees them after its grace period.",
)
# Per job (a PodGroup), set when the cycle binds its members; Volcano's labels, ms and Unix seconds.
_JOB_LABELS = ["job_name", "queue", "job_namespace"]
JOB_GAUGES: dict[str, Gauge] = {
    "duration": Gauge("volcano_e2e_job_scheduling_duration", "E2E job scheduling duration", _JOB_LABELS),
    "start_time": Gauge(
        "volcano_e2e_job_scheduling_start_time", "E2E job scheduling start time", _JOB_LABELS
    ),
    "last_time": Gauge("volcano_e2e_job_scheduling_last_time", "E2E job scheduling last time", _JOB_LABELS),
}
PREDICTED_START = Gauge(
    "phalanx_job_predicted_start_time",
    "Reservation backfill's expected start of a waiting job (Unix seconds), as published on its "
    "PodGroup; the series goes when the job starts or its start can no longer be foreseen.",
    _JOB_LABELS,
)
RESERVED_GANGS = Gauge(
    "phalanx_scheduler_reserved_gangs",
    "Waiting gangs holding a reservation after the last cycle (reservation backfill).",
)


def _queue_gauge(name: str, documentation: str) -> Gauge:
    return Gauge(f"volcano_queue_{name}", documentation, ["queue_name"])


QUEUE_GAUGES: dict[str, Gauge] = {
    "allocated_milli_cpu": _queue_gauge("allocated_milli_cpu", "Allocated CPU count for one queue"),
    "allocated_memory_bytes": _queue_gauge("allocated_memory_bytes", "Allocated memory for one queue"),
    "request_milli_cpu": _queue_gauge("request_milli_cpu", "Request CPU count for one queue"),
    "request_memory_bytes": _queue_gauge("request_memory_bytes", "Request memory for one queue"),
    "deserved_milli_cpu": _queue_gauge("deserved_milli_cpu", "Deserved CPU count for one queue"),
    "deserved_memory_bytes": _queue_gauge("deserved_memory_bytes", "Deserved memory for one queue"),
    "capacity_milli_cpu": _queue_gauge("capacity_milli_cpu", "Capacity CPU count for one queue"),
    "capacity_memory_bytes": _queue_gauge("capacity_memory_bytes", "Capacity memory for one queue"),
    "share": _queue_gauge("share", "Share for one queue"),
    "weight": _queue_gauge("weight", "Weight for one queue"),
    "overused": _queue_gauge("overused", "If one queue is overused"),
}

# -- Phalanx's own -----------------------------------------------------------------------------------

CYCLE_SECONDS = Histogram("phalanx_scheduler_cycle_seconds", "Time of one scheduling cycle.")
CYCLE_PHASE_SECONDS = Histogram(
    "phalanx_scheduler_cycle_phase_seconds",
    "Time of one phase of a scheduling cycle: read (the snapshot), plan (the pure core), commit.",
    ["phase"],
)
LAST_CYCLE = Gauge(
    "phalanx_scheduler_last_cycle_timestamp_seconds",
    "Unix time at which this process last committed a scheduling cycle.",
)
PLACED_PODS = Counter("phalanx_scheduler_placed_pods", "Pods bound by decisions.")
EVICTED_PODS = Counter("phalanx_scheduler_evicted_pods", "Pods evicted by decisions.")
BACKLOG_PROBES = Counter(
    "phalanx_scheduler_backlog_probes",
    "Requests for the controller's decision backlog (back-pressure), asked only when it could hold.",
)
CONF_SKIPPED_ENTRIES = Gauge(
    "phalanx_scheduler_conf_skipped_entries",
    "Plugins and actions of the loaded volcano-scheduler.conf that were skipped (not implemented).",
)
IS_LEADER = Gauge("phalanx_scheduler_leader", "1 while this process holds the scheduling lease, else 0.")
LEADERSHIP_CHANGES = Counter(
    "phalanx_scheduler_leadership_changes",
    "Times this process gained or lost the scheduling lease, by change (acquired, lost).",
    ["change"],
)


# A member that counts towards the gang's minimum: on a node, or done.
_HOLDING = OCCUPYING_STATUSES | {SUCCEEDED}


# The last committed cycle's queue figures and when (monotonic), as this process's registry keeps
# the gauges: share_history.py samples them for the console.
_latest_queues: tuple[tuple[QueueFigures, ...], float] = ((), 0.0)


def latest_queue_figures() -> tuple[tuple[QueueFigures, ...], float]:
    return _latest_queues


class LeadershipWatch:
    """Counts lease changes from the epoch the cycle loop sees after each attempt to lead."""

    def __init__(self) -> None:
        self._epoch: int | None = None
        IS_LEADER.set(0)

    def observe(self, epoch: int | None) -> None:
        if epoch == self._epoch:
            return
        if self._epoch is not None:
            LEADERSHIP_CHANGES.labels("lost").inc()
        if epoch is not None:
            LEADERSHIP_CHANGES.labels("acquired").inc()
        self._epoch = epoch
        IS_LEADER.set(0 if epoch is None else 1)


class CycleMetrics:
    """Sets the per-cycle figures; remembers which labelled series it set so stale ones go away."""

    def __init__(self) -> None:
        self._unscheduled_jobs: set[str] = set()
        self._queues: set[str] = set()
        self._resource_series: set[tuple[str, str]] = set()  # (gauge key, queue) with a value
        self._job_series: dict[str, tuple[str, str, str]] = {}  # gang uid -> the job gauges' labels
        self._predicted: dict[str, tuple[str, str, str]] = {}  # gang uid -> its prediction's labels

    def record(self, plan: CyclePlan, snapshot: Snapshot, *, took_seconds: float, now: datetime) -> None:
        E2E_SCHEDULING_LATENCY.observe(took_seconds * 1000)
        CYCLE_SECONDS.observe(took_seconds)
        LAST_CYCLE.set(now.timestamp())
        gangs = {g.uid: g for g in snapshot.gangs}
        scheduled = plan.placements
        if scheduled:
            SCHEDULE_ATTEMPTS.labels("scheduled").inc(scheduled)
            PLACED_PODS.inc(scheduled)
        for placed in plan.binds:
            gang = gangs.get(placed.gang_uid)
            # A gang placed over several cycles counts once: when its first members are bound.
            if gang is not None and not any(t.status in OCCUPYING_STATUSES for t in gang.tasks):
                E2E_JOB_SCHEDULING_LATENCY.observe(max(0.0, (now - gang.created).total_seconds() * 1000))
            if gang is not None:
                self._record_job(gang, now)
        self._forget_jobs_gone(gangs)
        self._record_unschedulable(plan, gangs)
        UNDERFILLED_GANGS.set(len(plan.underfilled))
        self._record_evictions(plan)
        self._record_queues(plan.queues)
        self._record_predictions(plan, gangs)
        global _latest_queues
        _latest_queues = (plan.queues, time.monotonic())

    def _record_job(self, gang: GangInfo, now: datetime) -> None:
        """Volcano's per-job gauges, at each cycle that binds members of the job: from its
        creation to this bind (ms), its creation and this bind (Unix seconds)."""
        labels = (gang.name, gang.queue, gang.namespace)
        if (held := self._job_series.get(gang.uid)) is not None and held != labels:
            for gauge in JOB_GAUGES.values():
                gauge.remove(*held)
        self._job_series[gang.uid] = labels
        JOB_GAUGES["duration"].labels(*labels).set(max(0.0, (now - gang.created).total_seconds() * 1000))
        JOB_GAUGES["start_time"].labels(*labels).set(gang.created.timestamp())
        JOB_GAUGES["last_time"].labels(*labels).set(now.timestamp())

    def _record_predictions(self, plan: CyclePlan, gangs: dict[str, GangInfo]) -> None:
        RESERVED_GANGS.set(sum(1 for p in plan.predictions if p.reserved))
        current = {p.gang_uid: p for p in plan.predictions if p.published is not None and p.gang_uid in gangs}
        for uid in [uid for uid in self._predicted if uid not in current]:
            PREDICTED_START.remove(*self._predicted.pop(uid))
        for uid, prediction in current.items():
            gang = gangs[uid]
            labels = (gang.name, gang.queue, gang.namespace)
            if (held := self._predicted.get(uid)) is not None and held != labels:
                PREDICTED_START.remove(*held)
            self._predicted[uid] = labels
            assert prediction.published is not None
            PREDICTED_START.labels(*labels).set(prediction.published.timestamp())

    def _forget_jobs_gone(self, gangs: dict[str, GangInfo]) -> None:
        """A job no longer in the snapshot (deleted) loses its series, as Volcano's cleanMetrics."""
        for uid in [uid for uid in self._job_series if uid not in gangs]:
            labels = self._job_series.pop(uid)
            for gauge in JOB_GAUGES.values():
                gauge.remove(*labels)

    def _record_unschedulable(self, plan: CyclePlan, gangs: dict[str, GangInfo]) -> None:
        waiting: dict[str, int] = {}
        for verdict in plan.verdicts:
            gang = gangs.get(verdict.gang_uid)
            if gang is None:
                continue
            held = sum(1 for t in gang.tasks if t.status in _HOLDING)
            pending = len(gang.tasks) - held
            # Volcano's figure: the members still missing for the gang's minimum.
            missing = max(0, gang.min_member - held)
            waiting[f"{verdict.namespace}/{verdict.name}"] = missing
            if pending:
                SCHEDULE_ATTEMPTS.labels("unschedulable").inc(pending)
        for job in self._unscheduled_jobs - waiting.keys():
            UNSCHEDULE_TASK_COUNT.remove(job)
        for job, missing in waiting.items():
            UNSCHEDULE_TASK_COUNT.labels(job).set(missing)
        self._unscheduled_jobs = set(waiting)
        UNSCHEDULE_JOB_COUNT.set(len(waiting))

    def _record_evictions(self, plan: CyclePlan) -> None:
        preempting = [e for e in plan.evictions if e.reason in (PREEMPT, RECLAIM)]
        if preempting:
            PREEMPTION_VICTIMS.set(len(preempting))
            preemptors = {e.preemptor_gang_uid for e in preempting}
            PREEMPTION_ATTEMPTS.inc(len(preemptors))
        EVICTED_PODS.inc(len(plan.evictions))

    def _record_queues(self, figures: tuple[QueueFigures, ...]) -> None:
        names = {f.name for f in figures}
        for gone in self._queues - names:
            for key, gauge in QUEUE_GAUGES.items():
                if key in ("share", "weight", "overused") or (key, gone) in self._resource_series:
                    gauge.remove(gone)
                    self._resource_series.discard((key, gone))
        self._queues = names
        for figure in figures:
            self._set_resources(figure.name, "allocated", figure.allocated)
            self._set_resources(figure.name, "request", figure.request)
            self._set_resources(figure.name, "deserved", figure.deserved)
            self._set_resources(figure.name, "capacity", figure.capability, named_only=True)
            QUEUE_GAUGES["share"].labels(figure.name).set(figure.share)
            QUEUE_GAUGES["weight"].labels(figure.name).set(figure.weight)
            QUEUE_GAUGES["overused"].labels(figure.name).set(1 if figure.overused else 0)

    def _set_resources(
        self, queue: str, what: str, amounts: Resources | None, *, named_only: bool = False
    ) -> None:
        """Resources hold milli-units: CPU is milli-CPU already, memory milli-bytes becomes bytes.

        No figure (no deserved share computed; with `named_only`, a capability that does not name
        the resource) gives no series rather than a zero, which would read as "nothing allowed"."""
        for name, unit, scale in ((CPU, "milli_cpu", 1), (MEMORY, "memory_bytes", 1000)):
            key = f"{what}_{unit}"
            gauge = QUEUE_GAUGES[key]
            if amounts is None or (named_only and name not in amounts):
                if (key, queue) in self._resource_series:
                    gauge.remove(queue)
                    self._resource_series.discard((key, queue))
            else:
                gauge.labels(queue).set(amounts[name] / scale)
                self._resource_series.add((key, queue))


def record_error() -> None:
    """A cycle that failed: Volcano's 'error' result, an internal scheduler problem."""
    SCHEDULE_ATTEMPTS.labels("error").inc()
