"""A job of two billion replicas: each sync creates a bounded batch of pods, lowest indexes first,
never materializing the whole task, and the next sync continues where the pods stop."""

from __future__ import annotations

import pytest

from services.controller.core import events as ev
from services.controller.core.effects import CreatePods
from services.controller.core.jobstate import ObservedTaskSpec
from services.controller.core.lifecycle import transition
from services.controller.core.reconcile import CREATE_BATCH

from .builders import NOW, pods, state

pytestmark = pytest.mark.unit
HUGE = 2_147_483_647


def created(result_effects: tuple[object, ...]) -> CreatePods:
    return next(e for e in result_effects if isinstance(e, CreatePods))


def test_a_huge_task_creates_one_bounded_batch_per_sync() -> None:
    job = state("Pending", podgroup="Inqueue", tasks=(ObservedTaskSpec("worker", HUGE, min_available=1),))
    result = transition(job, ev.PodGroupPhaseChanged("Inqueue"), NOW)
    batch = created(result.effects)
    assert len(batch.pods) == CREATE_BATCH
    assert [ref.pod_index for ref in batch.pods] == list(range(CREATE_BATCH))


def test_the_next_batch_waits_until_the_first_is_placed() -> None:
    tasks = (ObservedTaskSpec("worker", HUGE, min_available=1),)
    waiting = state(
        "Pending", podgroup="Inqueue", tasks=tasks, pod_list=pods("worker", *["Pending"] * CREATE_BATCH)
    )
    effects = transition(waiting, ev.PodGroupPhaseChanged("Inqueue"), NOW).effects
    assert not any(isinstance(e, CreatePods) for e in effects)

    placed = state(
        "Running", podgroup="Running", tasks=tasks, pod_list=pods("worker", *["Running"] * CREATE_BATCH)
    )
    batch = created(transition(placed, ev.PodGroupPhaseChanged("Running"), NOW).effects)
    assert [ref.pod_index for ref in batch.pods] == list(range(CREATE_BATCH, 2 * CREATE_BATCH))


def test_a_gang_larger_than_a_batch_gets_all_its_members_waiting_at_once() -> None:
    gang = CREATE_BATCH + 100
    tasks = (ObservedTaskSpec("worker", gang, min_available=gang),)
    first = pods("worker", *["Pending"] * CREATE_BATCH)
    job = state("Pending", podgroup="Inqueue", tasks=tasks, pod_list=first)
    batch = created(transition(job, ev.PodGroupPhaseChanged("Inqueue"), NOW).effects)
    assert [ref.pod_index for ref in batch.pods] == list(range(CREATE_BATCH, gang))


def test_a_small_job_still_gets_every_pod_at_once() -> None:
    job = state("Pending", podgroup="Inqueue", tasks=(ObservedTaskSpec("a", 3), ObservedTaskSpec("b", 2)))
    batch = created(transition(job, ev.PodGroupPhaseChanged("Inqueue"), NOW).effects)
    assert [ref.name for ref in batch.pods] == ["job-a-0", "job-a-1", "job-a-2", "job-b-0", "job-b-1"]
