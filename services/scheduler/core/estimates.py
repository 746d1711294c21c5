"""Pure: how long a gang is expected to run, for reservation backfill and start-time predictions.

The reservation planner (`reservation.py`) asks `estimate(gang, history)` for every gang that holds
or wants nodes. The answer comes from the first source that has one:

1. the annotation `phalanx.io/expected-runtime` on the PodGroup (a Volcano Job's annotations are
   copied onto its PodGroup), a Go duration such as `2h30m` or a number of seconds
   (`shared/domain/runtime_estimate.py`; admission refuses a bad one);
2. the smallest `activeDeadlineSeconds` of the gang's pods: the kubelet ends a pod by then, so the
   gang cannot run longer (Slurm's time limit plays the same part);
3. learned: the 90th percentile of the last 20 finished runs of the same job class in the same
   queue, once there are at least 3 (the class is the `phalanx.io/job-class` annotation of the
   PodGroup, else that label on its pods); a high percentile, because an estimate that is too
   short delays the reserved gang while one that is too long only wastes a backfill chance;
4. otherwise unknown, treated as unbounded: the gang's nodes never free up in the plan.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from services.scheduler.core.snapshot import FAILED, SUCCEEDED, GangInfo, Snapshot
from shared.domain.runtime_estimate import (
    EXPECTED_RUNTIME as EXPECTED_RUNTIME,  # re-exported: the key is read here
)
from shared.domain.runtime_estimate import runtime_seconds
from shared.volcano.keys import JOB_CLASS
from shared.volcano.keys import PREDICTED_START as PREDICTED_START_ANNOTATION

PREDICTED_START = PREDICTED_START_ANNOTATION

LEARN_FROM_LAST = 20
LEARN_PERCENTILE = 0.9
LEARN_MINIMUM_RUNS = 3

ANNOTATION = "annotation"
DEADLINE = "activeDeadlineSeconds"
LEARNED = "learned"
UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Estimate:
    seconds: float | None  # None: unknown, the gang may run for ever
    source: str  # annotation | activeDeadlineSeconds | learned | unknown


def job_class(gang: GangInfo) -> str | None:
    """The key learned estimates are kept under, inside the gang's queue."""
    if gang.annotations.get(JOB_CLASS):
        return gang.annotations[JOB_CLASS]
    for task in gang.tasks:
        if task.labels.get(JOB_CLASS):
            return task.labels[JOB_CLASS]
    return None


def history_key(queue: str, klass: str) -> str:
    return f"{queue}/{klass}"


def estimate(gang: GangInfo, history: Mapping[str, Sequence[float]]) -> Estimate:
    """The gang's expected runtime from the first source that gives one (module docstring)."""
    raw = gang.annotations.get(EXPECTED_RUNTIME)
    if raw is not None:
        seconds = runtime_seconds(raw)
        if seconds is not None:
            return Estimate(seconds, ANNOTATION)
    deadlines = [t.active_deadline_seconds for t in gang.tasks if t.active_deadline_seconds]
    if deadlines:
        return Estimate(float(min(d for d in deadlines if d is not None)), DEADLINE)
    klass = job_class(gang)
    if klass is not None:
        learned = learn(history.get(history_key(gang.queue, klass), ()))
        if learned is not None:
            return Estimate(learned, LEARNED)
    return Estimate(None, UNKNOWN)


def learn(runtimes: Sequence[float]) -> float | None:
    """The nearest-rank 90th percentile of the last 20 runtimes (oldest first), or None below 3."""
    recent = sorted(runtimes[-LEARN_FROM_LAST:])
    if len(recent) < LEARN_MINIMUM_RUNS:
        return None
    rank = max(1, math.ceil(LEARN_PERCENTILE * len(recent)))
    return recent[rank - 1]


def parse_instant(raw: str | None) -> datetime | None:
    """A predicted start as the annotation stores it (ISO 8601, UTC, `Z`), or None."""
    if not raw:
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None


def format_instant(moment: datetime) -> str:
    """ISO 8601 in whole seconds, UTC, `Z`: how predictions appear in annotations and messages."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return (moment + timedelta(microseconds=500_000)).replace(microsecond=0).isoformat() + "Z"


@dataclass(frozen=True, slots=True)
class RunStarted:
    gang_uid: str
    namespace: str
    name: str
    queue: str
    job_class: str | None
    estimate: Estimate
    started_at: datetime


@dataclass(frozen=True, slots=True)
class RunEnded:
    gang_uid: str
    history_key: str | None  # where a successful run is learned under; None without a class
    finished_at: datetime
    seconds: float
    outcome: str  # Succeeded | Failed


def runs_changed(
    snapshot: Snapshot, started: Mapping[str, datetime], ended: Collection[str]
) -> tuple[list[RunStarted], list[RunEnded]]:
    """Gangs seen started or ended for the first time, for the runtime records: a gang starts when
    its first pod does (the estimate it was planned with is recorded then) and ends when every pod
    has; it is seen ending at the snapshot's `now`, within a cycle of the end."""
    starts: list[RunStarted] = []
    ends: list[RunEnded] = []
    for gang in snapshot.gangs:
        begun = [t.started for t in gang.tasks if t.started is not None]
        if not begun:
            continue
        first = started.get(gang.uid, min(begun))
        klass = job_class(gang)
        if gang.uid not in started:
            known = estimate(gang, snapshot.runtime_history)
            starts.append(RunStarted(gang.uid, gang.namespace, gang.name, gang.queue, klass, known, first))
        if gang.uid in ended or not all(t.status in (SUCCEEDED, FAILED) for t in gang.tasks):
            continue
        outcome = SUCCEEDED if all(t.status == SUCCEEDED for t in gang.tasks) else FAILED
        key = history_key(gang.queue, klass) if klass is not None else None
        seconds = max(0.0, (snapshot.now - first).total_seconds())
        ends.append(RunEnded(gang.uid, key, snapshot.now, seconds, outcome))
    return starts, ends
