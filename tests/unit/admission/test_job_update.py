"""Job validation on UPDATE: only minAvailable, priorityClassName and task replicas /
minAvailable may change, within the same bounds as on CREATE; Volcano reports the first reason."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from services.admission.rules import compose, default_job, validate_job_update

from .builders import context, job, task

pytestmark = pytest.mark.unit

FORBIDDEN = (
    "job updates may not change fields other than `minAvailable`, "
    "`tasks[*].replicas under spec` and `PriorityClassName`"
)
BASE = default_job(
    job(
        tasks=[task("ps", 1), task("worker", 3)],
        volumes=[{"mountPath": "/out", "volumeClaim": {"accessModes": ["ReadWriteOnce"]}}],
    )
)


def change(edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    updated = copy.deepcopy(BASE)
    edit(updated["spec"])
    return updated


def set_task(index: int, **fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda spec: spec["tasks"][index].update(fields)


CASES: list[tuple[str, Callable[[dict[str, Any]], None], str, list[str]]] = [
    ("nothing", lambda spec: None, "", []),
    ("scale-workers", set_task(1, replicas=5), "", []),
    ("task-min-available", set_task(1, minAvailable=2), "", []),
    ("job-min-available", lambda spec: spec.update(minAvailable=2), "", []),
    ("priority-class", lambda spec: spec.update(priorityClassName="high"), "", []),
    ("metadata-only", lambda spec: None, "", []),
    (
        "generated-claim-name",
        lambda spec: spec["volumes"][0].update(volumeClaimName="job-1-volume-abcde"),
        "",
        [],
    ),
    ("empty-list-is-absent", lambda spec: spec.update(policies=[]), "", []),
    (
        "negative-replicas",
        set_task(1, replicas=-1),
        "'replicas' must be >= 0 in task: worker",
        ["spec.tasks[1].replicas"],
    ),
    (
        "negative-task-min-available",
        set_task(1, minAvailable=-1),
        "'minAvailable' must be >= 0 in task: worker",
        ["spec.tasks[1].minAvailable"],
    ),
    (
        "task-min-available-above-replicas",
        set_task(0, minAvailable=2),
        "'minAvailable' must be <= 'replicas' in task: ps",
        ["spec.tasks[0].minAvailable"],
    ),
    (
        "partition-mismatch",
        set_task(1, partitionPolicy={"totalPartitions": 2, "partitionSize": 2}),
        "'Replicas' are not equal to TotalPartitions*PartitionSize in task: worker, job: job-1",
        ["spec.tasks[1].replicas"],
    ),
    (
        "job-min-available-above-replicas",
        lambda spec: spec.update(minAvailable=5),
        "job 'minAvailable' must not be greater than total replicas",
        ["spec.minAvailable"],
    ),
    (
        "job-min-available-negative",
        lambda spec: spec.update(minAvailable=-1),
        "job 'minAvailable' must be >= 0",
        ["spec.minAvailable"],
    ),
    (
        "network-topology-both",
        lambda spec: spec.update(networkTopology={"highestTierAllowed": 1, "highestTierName": "x"}),
        "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously",
        ["spec.networkTopology"],
    ),
    (
        "add-task",
        lambda spec: spec["tasks"].append(task("extra")),
        "job updates may not add or remove tasks",
        ["spec.tasks"],
    ),
    ("move-queue", lambda spec: spec.update(queue="other"), FORBIDDEN, ["spec"]),
    ("change-image", set_task(0, template={"spec": {"containers": []}}), FORBIDDEN, ["spec"]),
    ("rename-task", set_task(0, name="chief"), FORBIDDEN, ["spec"]),
    (
        "first-reason-only",
        lambda spec: spec.update(minAvailable=-1, queue="x"),
        "job 'minAvailable' must be >= 0",
        ["spec.minAvailable"],
    ),
]


@pytest.mark.parametrize(("edit", "message", "fields"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_job_update_rule(edit: Callable[[dict[str, Any]], None], message: str, fields: list[str]) -> None:
    errors = validate_job_update(BASE, change(edit), context())
    assert compose(errors, "first") == message
    assert [error.field for error in errors] == fields
