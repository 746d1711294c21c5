"""Small builders for lifecycle tests: a job state in a few words, pods by phase."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from services.controller.core.jobstate import (
    DelayedAction,
    ObservedJob,
    ObservedJobStatus,
    ObservedTaskSpec,
    PodGroupView,
    PodView,
)
from services.controller.core.policies import Policy

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
CREATED = NOW - timedelta(hours=1)


def pods(task: str, *phases: str, job: str = "job", version: int = 0) -> tuple[PodView, ...]:
    """Pods `<job>-<task>-<i>` in the given phases."""
    return tuple(
        PodView(f"{job}-{task}-{i}", task, i, uid=f"uid-{task}-{i}", phase=phase, job_version=version)
        for i, phase in enumerate(phases)
    )


def state(
    phase: str = "Running",
    *,
    tasks: Iterable[ObservedTaskSpec] = (ObservedTaskSpec("worker", 3, min_available=3),),
    min_available: int | None = None,
    min_success: int | None = None,
    max_retry: int = 3,
    retry: int = 0,
    version: int = 0,
    pod_list: Iterable[PodView] = (),
    podgroup: str | None = "Running",
    policies: Iterable[Policy] = (),
    plugins: Iterable[str] = (),
    timers: Iterable[DelayedAction] = (),
    ttl: int | None = None,
    controlled: dict[str, str] | None = None,
    terminating: int = 0,
) -> ObservedJob:
    task_tuple = tuple(tasks)
    if min_available is None:
        min_available = sum(t.min_available or t.replicas for t in task_tuple)
    return ObservedJob(
        uid="uid-1",
        namespace="ns",
        name="job",
        created_at=CREATED,
        min_available=min_available,
        min_success=min_success,
        max_retry=max_retry,
        ttl_seconds_after_finished=ttl,
        tasks=task_tuple,
        policies=tuple(policies),
        plugins=tuple(plugins),
        status=ObservedJobStatus(
            phase=phase,
            last_transition_time=CREATED if phase else None,
            version=version,
            retry_count=retry,
            min_available=min_available,
            controlled_resources=controlled or {},
            terminating=terminating,
        ),
        pods=tuple(pod_list),
        podgroup=None if podgroup is None else PodGroupView("job-uid-1", podgroup),
        timers=tuple(timers),
    )
