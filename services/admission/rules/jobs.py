"""Volcano Job admission: defaulting on CREATE, validation on CREATE and UPDATE.

Called by `review.py` for `batch.volcano.sh/v1alpha1` Jobs. Works on the Kubernetes JSON the
API server sent (a dict) and never changes its input. The checks are Volcano's webhook rules
plus the basic checks Volcano moved into its CRD schema and ValidatingAdmissionPolicy (negative
counts, task names), each worded as Volcano words it; CREATE messages are composed with the
"concat" style, UPDATE with "first" (see errors.compose).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from shared.domain.runtime_estimate import EXPECTED_RUNTIME, annotation_error
from shared.volcano import DEFAULT_QUEUE, ROOT_QUEUE, NumaPolicy
from shared.volcano.objects import JobObject

from .capacity import capability_errors
from .context import AdmissionContext
from .errors import FieldError, MessageStyle, go_list
from .job_checks import (
    int_value,
    is_dag,
    is_whole_cpu,
    mpi_master,
    network_topology,
    partition_errors,
    volume_errors,
)
from .names import dns1123_label_errors, qualified_name_errors
from .policies import validate_policies
from .queue_namespaces import namespace_errors
from .templates import validate_template

CREATE_STYLE: MessageStyle = "concat"
UPDATE_STYLE: MessageStyle = "first"
DEFAULT_MAX_RETRY = 3
DEFAULT_TASK_PREFIX = "default"
# Plugins that need the svc plugin's headless service to find their peers.
NEEDS_SVC = ("tensorflow", "mpi", "pytorch", "ray")
UPDATE_FORBIDDEN = (
    "job updates may not change fields other than `minAvailable`, "
    "`tasks[*].replicas under spec` and `PriorityClassName`"
)


def default_job(job: Mapping[str, Any], *, scheduler_name: str = "volcano") -> dict[str, Any]:
    """The job with Volcano's CREATE defaults applied (a new dict; `job` is untouched).
    A shape the CRD schema refuses (a list where an object belongs) may raise TypeError or
    AttributeError; `review` answers those with 400."""
    result = copy.deepcopy(dict(job))
    spec = result.setdefault("spec", {})
    if not spec.get("queue"):
        spec["queue"] = DEFAULT_QUEUE
    if not spec.get("schedulerName"):
        spec["schedulerName"] = scheduler_name
    if not spec.get("maxRetry"):
        spec["maxRetry"] = DEFAULT_MAX_RETRY
    tasks = spec.get("tasks") or []
    for index, task in enumerate(tasks):
        _default_task(task, index)
    if not spec.get("minAvailable"):
        spec["minAvailable"] = sum(int_value(task.get("minAvailable")) for task in tasks)
    plugins = spec.get("plugins")
    if isinstance(plugins, dict):
        if any(name in plugins for name in NEEDS_SVC) and "svc" not in plugins:
            plugins["svc"] = []
        if "mpi" in plugins and "ssh" not in plugins:
            plugins["ssh"] = []
    return result


def _default_task(task: dict[str, Any], index: int) -> None:
    if not task.get("name"):
        task["name"] = f"{DEFAULT_TASK_PREFIX}{index}"
    pod_spec = (task.get("template") or {}).get("spec")
    if isinstance(pod_spec, dict) and pod_spec.get("hostNetwork") and not pod_spec.get("dnsPolicy"):
        pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if task.get("minAvailable") is None:
        partition = task.get("partitionPolicy") or {}
        if int_value(partition.get("minPartitions")) > 0:
            task["minAvailable"] = int_value(partition["minPartitions"]) * int_value(
                partition.get("partitionSize")
            )
        else:
            task["minAvailable"] = int_value(task.get("replicas"))
    if not task.get("maxRetry"):
        task["maxRetry"] = DEFAULT_MAX_RETRY


def validate_job_create(job: Mapping[str, Any], ctx: AdmissionContext) -> list[FieldError]:
    """Everything wrong with a new (already defaulted) job, in Volcano's order."""
    spec = job.get("spec") or {}
    view = JobObject(job)
    name = str(view.name)
    if basics := _basic_counts(spec):
        return basics[:1]  # Volcano answered these alone, before anything else
    tasks: Sequence[dict[str, Any]] = spec.get("tasks") or []
    if not tasks:
        return [FieldError("spec.tasks", "No task specified in job spec", "FieldValueRequired")]
    plugins = spec.get("plugins") or {}
    if "mpi" in plugins and mpi_master(plugins["mpi"]) not in {t.get("name") for t in tasks}:
        return [
            FieldError(
                "spec.plugins.mpi",
                "The specified mpi master task was not found",
                "FieldValueNotSupported",
            )
        ]
    errors = network_topology(spec.get("networkTopology"), "spec.networkTopology")
    errors += _task_errors(tasks, name)
    if name_errors := qualified_name_errors(name):
        errors.append(
            FieldError(
                "metadata.name",
                f"create job with name {name} validate failed {go_list(name_errors)}",
            )
        )
    if sum(int_value(task.get("replicas")) for task in tasks) < int_value(spec.get("minAvailable")):
        message = "job 'minAvailable' should not be greater than total replicas in tasks"
        errors.append(FieldError("spec.minAvailable", message, text=f" {message};"))
    errors += validate_policies(spec.get("policies"), "spec.policies", "spec.policies")
    for plugin in plugins:
        if plugin not in ctx.known_plugins:
            message = f"unable to find job plugin: {plugin}"
            errors.append(
                FieldError(f"spec.plugins.{plugin}", message, "FieldValueNotSupported", f" {message};")
            )
    errors += volume_errors(spec.get("volumes") or [])
    queue = str(spec.get("queue") or DEFAULT_QUEUE)
    queue_errors = _queue_errors(queue, ctx)
    errors += queue_errors
    if not queue_errors:
        errors += capability_errors(tasks, int_value(spec.get("minAvailable")), ctx.queues[queue])
    errors += namespace_errors(queue, str(view.namespace), ctx, listed=True)
    priority_class = spec.get("priorityClassName")
    if priority_class and not ctx.priority_class_exists(str(priority_class)):
        message = f"no PriorityClass with name {priority_class} was found"
        errors.append(FieldError("spec.priorityClassName", message, "FieldValueNotSupported", f" {message};"))
    if any(task.get("dependsOn") for task in tasks) and not is_dag(tasks):
        message = "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG)"
        errors.append(FieldError("spec.tasks", message, text=f" {message};"))
    if (runtime := annotation_error(view.meta.get("annotations"))) is not None:
        errors.append(FieldError(f"metadata.annotations[{EXPECTED_RUNTIME}]", runtime, text=f" {runtime};"))
    return errors


def _basic_counts(spec: Mapping[str, Any]) -> list[FieldError]:
    checks = (
        ("minAvailable", 0, "job 'minAvailable' must be >= 0."),
        ("maxRetry", 0, "'maxRetry' cannot be less than zero."),
        ("ttlSecondsAfterFinished", 0, "'ttlSecondsAfterFinished' cannot be less than zero."),
        ("minSuccess", 1, "job 'minSuccess' must be >= 1."),
    )
    return [
        FieldError(f"spec.{key}", message)
        for key, lowest, message in checks
        if spec.get(key) is not None and int_value(spec[key]) < lowest
    ]


def _task_errors(tasks: Sequence[dict[str, Any]], job_name: str) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[str] = set()
    for index, task in enumerate(tasks):
        path, task_name = f"spec.tasks[{index}]", str(task.get("name") or "")
        where = f"in task: {task_name}, job: {job_name}"
        replicas = int_value(task.get("replicas"))
        if replicas < 0:
            errors.append(_fragment(f"{path}.replicas", f"'replicas' < 0 {where}"))
        minimum = task.get("minAvailable")
        if minimum is not None and int_value(minimum) < 0:
            errors.append(_fragment(f"{path}.minAvailable", f"'minAvailable' < 0 {where}"))
        elif minimum is not None and int_value(minimum) > replicas:
            message = f"'minAvailable' is greater than 'replicas' {where}"
            errors.append(_fragment(f"{path}.minAvailable", message))
        if label_errors := dns1123_label_errors(task_name):
            errors.append(
                FieldError(f"{path}.name", ", ".join(label_errors), text=f" {go_list(label_errors)};")
            )
        if task_name in seen:
            message = f"duplicated task name {task_name}"
            errors.append(FieldError(f"{path}.name", message, "FieldValueDuplicate", f" {message};"))
            break  # Volcano stops looking at tasks here
        seen.add(task_name)
        errors += validate_policies(task.get("policies"), f"{path}.policies", "spec.tasks.policies")
        pod_name = f"{job_name}-{task_name}-{index}"
        if pod_errors := qualified_name_errors(pod_name):
            message = f"create pod with name {pod_name} validate failed {go_list(pod_errors)}"
            errors.append(FieldError(f"{path}.name", message, text=f"{message};"))
        template_errors = validate_template(task.get("template"), index)
        errors += template_errors
        if not template_errors:
            errors += _topology_policy(task, index)
        errors += partition_errors(task, path, where)
    return errors


def _fragment(field: str, message: str) -> FieldError:
    return FieldError(field, message, text=f" {message};")


def _topology_policy(task: Mapping[str, Any], index: int) -> list[FieldError]:
    if task.get("topologyPolicy") in (None, "", NumaPolicy.NONE):
        return []
    pod_spec = (task.get("template") or {}).get("spec") or {}
    containers = list(pod_spec.get("containers") or []) + list(pod_spec.get("initContainers") or [])
    for position, container in enumerate(containers):
        resources = container.get("resources") or {}
        cpu = (resources.get("requests") or resources.get("limits") or {}).get("cpu", 0)
        if not is_whole_cpu(cpu):
            message = f"the cpu request isn't an integer in spec.task[{index}] container[{position}]."
            return [FieldError(f"spec.tasks[{index}].topologyPolicy", message)]
    return []


def _queue_errors(queue: str, ctx: AdmissionContext) -> list[FieldError]:
    view = ctx.queues.get(queue)
    if view is None:
        message = f'unable to find job queue: queue.scheduling.volcano.sh "{queue}" not found'
        return [FieldError("spec.queue", message, "FieldValueNotSupported", f" {message};")]
    errors = []
    if view.state != "Open":
        message = f"can only submit job to queue with state `Open`, queue `{queue}` status is `{view.state}`"
        errors.append(FieldError("spec.queue", message, text=f" {message};"))
    if queue == ROOT_QUEUE:
        message = "can not submit job to root queue"
        errors.append(FieldError("spec.queue", message, "FieldValueForbidden", f" {message};"))
    elif children := ctx.children(queue):
        message = f"can only submit job to leaf queue, queue `{queue}` has {len(children)} child queues"
        errors.append(FieldError("spec.queue", message, text=f" {message};"))
    return errors


def validate_job_update(
    old: Mapping[str, Any], new: Mapping[str, Any], ctx: AdmissionContext
) -> list[FieldError]:
    """Why an update is refused (Volcano reports the first reason only), or []."""
    del ctx  # updates are judged on the two objects alone, as in Volcano
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    tasks, old_tasks = spec.get("tasks") or [], old_spec.get("tasks") or []
    total = 0
    for index, task in enumerate(tasks):
        path, task_name = f"spec.tasks[{index}]", task.get("name", "")
        replicas, minimum = int_value(task.get("replicas")), task.get("minAvailable")
        if replicas < 0:
            return [FieldError(f"{path}.replicas", f"'replicas' must be >= 0 in task: {task_name}")]
        if minimum is not None and int_value(minimum) < 0:
            return [FieldError(f"{path}.minAvailable", f"'minAvailable' must be >= 0 in task: {task_name}")]
        if minimum is not None and int_value(minimum) > replicas:
            return [
                FieldError(
                    f"{path}.minAvailable",
                    f"'minAvailable' must be <= 'replicas' in task: {task_name}",
                )
            ]
        job_name = str(JobObject(new).name)
        if partition := partition_errors(task, path, f"in task: {task_name}, job: {job_name}"):
            return partition[:1]
        total += replicas
    minimum = int_value(spec.get("minAvailable"))
    if minimum > total:
        return [FieldError("spec.minAvailable", "job 'minAvailable' must not be greater than total replicas")]
    if minimum < 0:
        return [FieldError("spec.minAvailable", "job 'minAvailable' must be >= 0")]
    if topology := network_topology(spec.get("networkTopology"), "spec.networkTopology"):
        return topology
    if len(tasks) != len(old_tasks):
        return [FieldError("spec.tasks", "job updates may not add or remove tasks", "FieldValueForbidden")]
    if _frozen_part(spec) != _frozen_part(old_spec):
        return [FieldError("spec", UPDATE_FORBIDDEN, "FieldValueForbidden")]
    return []


def _frozen_part(spec: Mapping[str, Any]) -> Any:
    """The spec without what an update may change, compared as Go compares (empty == absent)."""
    frozen = copy.deepcopy(dict(spec))
    for key in ("minAvailable", "priorityClassName"):
        frozen.pop(key, None)
    for task in frozen.get("tasks") or []:
        task.pop("replicas", None)
        task.pop("minAvailable", None)
    for volume in frozen.get("volumes") or []:
        if isinstance(volume, dict) and volume.get("volumeClaim") is not None:
            volume.pop("volumeClaimName", None)  # the controller fills in generated claim names
    return _without_empty(frozen)


def _without_empty(value: Any) -> Any:
    if isinstance(value, dict):
        cleaned = {key: _without_empty(item) for key, item in value.items()}
        return {
            key: item for key, item in cleaned.items() if item not in (None, "", 0, [], {}) or item is False
        }
    if isinstance(value, list):
        return [_without_empty(item) for item in value]
    return value
