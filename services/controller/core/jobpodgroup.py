"""The PodGroup of a Volcano Job: `<job>-<uid>`, the gang the scheduler admits and places.

The shell turns an `EnsurePodGroup` effect into `build_podgroup(job)` and, for an existing
PodGroup, `podgroup_needs_update(existing, desired)` (Volcano updates only priorityClassName,
minMember, minResources, minTaskMember and subGroupPolicy). minResources is computed as Volcano
does, over tasks ordered by their PriorityClass value (passed in: the core reads no cluster).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.controller.core.owners import job_ref
from services.controller.core.quota import pod_quota_usage, to_resource_list
from shared.domain.resources import Resources
from shared.volcano import keys
from shared.volcano.objects import JobObject

Json = Mapping[str, Any]


def min_task_member(task: Json) -> int:
    """task.minAvailable, else minPartitions * partitionSize, else replicas."""
    if task.get("minAvailable") is not None:
        return int(task["minAvailable"])
    partition = task.get("partitionPolicy") or {}
    if partition.get("minPartitions") and partition.get("partitionSize"):
        return int(partition["minPartitions"]) * int(partition["partitionSize"])
    return int(task.get("replicas") or 0)


def _by_priority(job: Json, priorities: Mapping[str, int]) -> list[Json]:
    tasks = list((job.get("spec") or {}).get("tasks") or ())

    def value(task: Json) -> int:
        name = ((task.get("template") or {}).get("spec") or {}).get("priorityClassName") or ""
        return priorities.get(name, 0)

    return sorted(tasks, key=value, reverse=True)  # stable, like Go's sort on equal values


def _usage(task: Json, count: int) -> Resources:
    return pod_quota_usage((task.get("template") or {}).get("spec") or {}) * count


def min_resources(job: Json, priorities: Mapping[str, int] | None = None) -> Resources:
    """Resources of the first `minAvailable` pods, as Volcano's calcPGMinResources counts them."""
    spec = job.get("spec") or {}
    min_available = int(spec.get("minAvailable") or 0)
    tasks = _by_priority(job, priorities or {})
    total_min = sum(
        int(t["minAvailable"]) if t.get("minAvailable") is not None else int(t.get("replicas") or 0)
        for t in tasks
    )
    result = Resources()
    if min_available < total_min:
        left = min_available
        for task in tasks:
            replicas = int(task.get("replicas") or 0)
            result += _usage(task, min(left, replicas))
            left -= min(left, replicas)
            if left <= 0:
                break
        return result
    counted = 0
    for task in tasks:
        if task.get("minAvailable") is None:
            continue
        take = min(int(task["minAvailable"]), min_available - counted)
        result += _usage(task, take)
        counted += take
        if counted >= min_available:
            return result
    left = min_available - counted
    for task in tasks:
        replicas = int(task.get("replicas") or 0)
        minimum = task.get("minAvailable")
        spare = replicas if minimum is None else replicas - int(minimum)
        if spare <= 0:
            continue
        take = min(left, spare)
        result += _usage(task, take)
        left -= take
        if left <= 0:
            break
    return result


def _sub_group_policy(task: Json) -> dict[str, Any]:
    partition = task["partitionPolicy"]
    policy: dict[str, Any] = {
        "name": task.get("name", ""),
        "subGroupSize": int(partition.get("partitionSize") or 1),
        "minSubGroups": int(partition.get("minPartitions") or 0),
        "labelSelector": {"matchLabels": {keys.TASK_SPEC: task.get("name", "")}},
        "matchLabelKeys": [keys.PARTITION_ID],
    }
    if partition.get("networkTopology"):
        policy["networkTopology"] = dict(partition["networkTopology"])
    return policy


def build_podgroup(job: Json, priorities: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The PodGroup Volcano creates for `job`; `priorities` maps PriorityClass names to values."""
    view = JobObject(job)
    spec = view.spec
    tasks = spec.get("tasks") or ()
    pg_spec: dict[str, Any] = {
        "minMember": int(spec.get("minAvailable") or 0),
        "minTaskMember": {str(t.get("name", "")): min_task_member(t) for t in tasks},
        "queue": spec.get("queue") or "default",
        "minResources": to_resource_list(min_resources(job, priorities)),
    }
    if spec.get("priorityClassName"):
        pg_spec["priorityClassName"] = spec["priorityClassName"]
    topology = spec.get("networkTopology")
    if topology:
        nt: dict[str, Any] = {"mode": topology.get("mode") or "hard"}
        if topology.get("highestTierAllowed") is not None:
            nt["highestTierAllowed"] = topology["highestTierAllowed"]
        elif topology.get("highestTierName"):
            nt["highestTierName"] = topology["highestTierName"]
        pg_spec["networkTopology"] = nt
    sub_groups = [_sub_group_policy(t) for t in tasks if t.get("partitionPolicy")]
    if sub_groups:
        pg_spec["subGroupPolicy"] = sub_groups
    return {
        "apiVersion": keys.SCHEDULING_API_VERSION,
        "kind": "PodGroup",
        "metadata": {
            "name": f"{view.name}-{view.uid}",
            "namespace": view.namespace,
            "annotations": dict(view.annotations),
            "labels": dict(view.labels),
            "ownerReferences": [job_ref(job)],
        },
        "spec": pg_spec,
        # As Volcano's job controller creates it: Pending from the start, so it is not written
        # again only to spell that out (PodGroup has no status subresource).
        "status": {"phase": "Pending"},
    }


_UPDATED_FIELDS = (
    "priorityClassName",
    "minMember",
    "minResources",
    "minTaskMember",
    "subGroupPolicy",
)


def podgroup_needs_update(existing: Json, desired: Json) -> dict[str, Any] | None:
    """The existing PodGroup with Volcano's updatable fields taken from `desired`, or None when
    they already agree (quantities compared by value, not spelling)."""
    old_spec = dict(existing.get("spec") or {})
    new_spec = desired.get("spec") or {}
    changed = False
    for field in _UPDATED_FIELDS:
        old, new = old_spec.get(field), new_spec.get(field)
        if field == "minResources":
            same = Resources.parse(old or {}) == Resources.parse(new or {})
        else:
            same = (old or None) == (new or None)
        if not same:
            changed = True
            if new is None:
                old_spec.pop(field, None)
            else:
                old_spec[field] = new
    if not changed:
        return None
    return {**existing, "spec": old_spec}
