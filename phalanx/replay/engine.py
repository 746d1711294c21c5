"""Virtual time: a trace's jobs arrive, are scheduled by the real core, run and finish.

At every moment something happens (a job arrives, a job finishes) the engine builds the `Snapshot`
the scheduler's shell would read at that moment and calls the same `plan_cycle(snapshot, conf)`;
gangs it binds start then and finish `runtime` seconds later. Nothing here sleeps, talks to NATS
or PostgreSQL, or reads a clock, so a month of a cluster replays in seconds, the same every time.
Gangs arrive admitted (Inqueue): the replay studies placement and waiting, not enqueue gating.

Estimates (`--estimates`): `trace` uses what the trace's users declared; `exact` the true runtime;
`over:F` the runtime times F (users' padded limits); `noisy:S` the runtime times e^N(0, S), drawn
per job from the seed; `learned` none declared, learned from finished runs of the same class;
`none` no estimate at all.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from phalanx.replay.trace import Trace, TraceJob
from services.scheduler.core import (
    GangInfo,
    NodeInfo,
    QueueInfo,
    SchedulerConf,
    Snapshot,
    TaskInfo,
    plan_cycle,
)
from services.scheduler.core.estimates import EXPECTED_RUNTIME, history_key
from shared.domain.resources import Resources
from shared.volcano.keys import JOB_CLASS

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
ONE_POD = Resources({"pods": 1000})


@dataclass(slots=True)
class JobOutcome:
    job: TraceJob
    estimate: float | None
    start: float | None = None
    end: float | None = None
    predicted: float | None = None  # the first start predicted while it waited
    nodes: tuple[str, ...] = ()


@dataclass(slots=True)
class Replay:
    trace: Trace
    nodes: tuple[NodeInfo, ...]
    outcomes: dict[str, JobOutcome]
    cycles: int = 0
    stuck: list[str] = field(default_factory=list)  # jobs that could never start


def cluster(trace: Trace, add_nodes: int = 0) -> tuple[NodeInfo, ...]:
    """The trace's nodes, plus `add_nodes` more like its last group (capacity planning)."""
    nodes = []
    groups = list(trace.nodes)
    for g, group in enumerate(groups):
        count = group.count + (add_nodes if g == len(groups) - 1 else 0)
        for i in range(count):
            allocatable = group.resources + Resources({"pods": 110_000})
            nodes.append(NodeInfo(name=f"g{g}-n{i:03d}", allocatable=allocatable))
    return tuple(nodes)


def estimate_of(job: TraceJob, mode: str, draw: random.Random) -> float | None:
    if mode == "trace":
        return job.estimate
    if mode == "exact":
        return job.runtime
    if mode.startswith("over:"):
        return job.runtime * float(mode.split(":", 1)[1])
    if mode.startswith("noisy:"):
        return job.runtime * math.exp(draw.gauss(0.0, float(mode.split(":", 1)[1])))
    if mode in ("learned", "none"):
        return None
    raise ValueError(f"--estimates: {mode!r} is not trace, exact, over:F, noisy:S, learned or none")


def run(
    trace: Trace, conf: SchedulerConf, *, estimates: str = "trace", add_nodes: int = 0, seed: int = 1
) -> Replay:
    draw = random.Random(seed)
    nodes = cluster(trace, add_nodes)
    outcomes = {job.name: JobOutcome(job, estimate_of(job, estimates, draw)) for job in trace.jobs}
    replay = Replay(trace, nodes, outcomes)
    queues = tuple(QueueInfo(name=name, weight=weight) for name, weight in trace.queues)
    events: list[tuple[float, int, str]] = [(job.arrival, 1, job.name) for job in trace.jobs]
    heapq.heapify(events)
    waiting: dict[str, JobOutcome] = {}
    running: dict[str, JobOutcome] = {}
    history: dict[str, list[float]] = defaultdict(list)
    learn = estimates == "learned"
    usage = None  # fairshare's decayed usage, carried from plan to snapshot as the leader does
    while events:
        now = events[0][0]
        while events and events[0][0] <= now:
            _, kind, name = heapq.heappop(events)
            outcome = outcomes[name]
            if kind == 1:
                waiting[name] = outcome
            else:
                del running[name]
                if outcome.job.job_class:
                    key = history_key(outcome.job.queue, outcome.job.job_class)
                    history[key].append(outcome.job.runtime)
        if not waiting:
            continue
        gangs = [_gang(o, "Running", learn) for o in running.values()]
        gangs += [_gang(o, "Inqueue", learn) for o in waiting.values()]
        snapshot = Snapshot(
            nodes=nodes,
            queues=queues,
            gangs=tuple(gangs),
            now=EPOCH + timedelta(seconds=now),
            runtime_history={key: tuple(values) for key, values in history.items()},
            queue_usage=usage,
        )
        plan = plan_cycle(snapshot, conf)
        usage = plan.queue_usage
        replay.cycles += 1
        for placed in plan.binds:
            outcome = waiting.pop(placed.gang_uid)
            outcome.start, outcome.end = now, now + outcome.job.runtime
            outcome.nodes = tuple(b.node for b in placed.binds)
            running[placed.gang_uid] = outcome
            heapq.heappush(events, (outcome.end, 0, placed.gang_uid))
        for prediction in plan.predictions:
            outcome = outcomes[prediction.gang_uid]
            if outcome.predicted is None and outcome.start is None and prediction.start is not None:
                outcome.predicted = (prediction.start - EPOCH).total_seconds()
    replay.stuck = sorted(waiting)
    return replay


def _gang(outcome: JobOutcome, phase: str, learn: bool) -> GangInfo:
    job = outcome.job
    annotations = {}
    if outcome.estimate is not None:
        annotations[EXPECTED_RUNTIME] = f"{outcome.estimate:.3f}s"
    if learn and job.job_class:
        annotations[JOB_CLASS] = job.job_class
    request = job.request + ONE_POD
    started = EPOCH + timedelta(seconds=outcome.start) if outcome.start is not None else None
    tasks = tuple(
        TaskInfo(
            uid=f"{job.name}-{i}",
            namespace="replay",
            name=f"{job.name}-worker-{i}",
            request=request,
            node=outcome.nodes[i] if phase == "Running" else None,
            status="Running" if phase == "Running" else "Pending",
            started=started,
        )
        for i in range(job.tasks)
    )
    return GangInfo(
        uid=job.name,
        namespace="replay",
        name=job.name,
        queue=job.queue,
        min_member=job.tasks,
        created=EPOCH + timedelta(seconds=job.arrival),
        tasks=tasks,
        phase=phase,
        annotations=annotations,
    )
