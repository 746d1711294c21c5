"""Pod manifests exactly as Volcano's job controller creates them, plus the job's claims.

The shell turns a `CreatePods` effect into manifests with `build_pod(job, task_index,
pod_index, podgroup_name)`: `<job>-<task>-<index>`, Volcano's labels and annotations, a
controller reference to the Job, inherited schedulerName and priorityClassName, the job's
volumes, and every plugin's mutation. `desired_pods` lists what a job should have.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any

from services.controller.core.owners import job_ref
from services.controller.core.plugins import apply_pod_plugins
from shared.volcano import keys
from shared.volcano.objects import JobObject

Json = Mapping[str, Any]

# Job annotations and labels the scheduler reads on pods, copied over when present.
# The job's trace context travels to its pods too (shared/tracing.py).
_COPIED_ANNOTATIONS = (keys.PREEMPTABLE, keys.COOLDOWN_TIME, keys.REVOCABLE_ZONE, keys.TRACEPARENT)
_COPIED_LABELS = (keys.PREEMPTABLE, keys.COOLDOWN_TIME)


def desired_pods(job: Json) -> list[tuple[int, int, str]]:
    """(task_index, pod_index, name) of every pod the job's spec asks for, in spec order."""
    name = str(JobObject(job).name)
    return [
        (t, i, f"{name}-{task.get('name')}-{i}")
        for t, task in enumerate((job.get("spec") or {}).get("tasks") or ())
        for i in range(int(task.get("replicas") or 0))
    ]


def volume_name(job_name: str, claim_name: str) -> str:
    """Pod volume name for a job volume. Volcano draws 12 random characters; we derive them
    from the claim so that rebuilding a pod gives the same manifest."""
    return f"{job_name}-{hashlib.sha256(claim_name.encode()).hexdigest()[:12]}"


def _add_volumes(pod: dict[str, Any], job: Json) -> None:
    job_name = str(JobObject(job).name)
    seen: set[str] = set()
    for volume in (job.get("spec") or {}).get("volumes") or ():
        claim = str(volume.get("volumeClaimName") or "")
        if claim in seen:
            continue
        seen.add(claim)
        name = volume_name(job_name, claim)
        pod["spec"].setdefault("volumes", []).append(
            {"name": name, "persistentVolumeClaim": {"claimName": claim}}
        )
        for container in pod["spec"].get("containers") or ():
            container.setdefault("volumeMounts", []).append(
                {"mountPath": volume.get("mountPath", ""), "name": name}
            )


def build_pod(
    job: Json,
    task_index: int,
    pod_index: int,
    podgroup_name: str | None = None,
    *,
    job_version: int | None = None,
    retry_count: int | None = None,
    forwarding: bool = False,
) -> dict[str, Any]:
    """The pod `<job>-<task>-<pod_index>` of `spec.tasks[task_index]`.

    `job_version` / `retry_count` default to the Job's status (pass the values of the
    `CreatePods` effect when the status is not written yet); `forwarding` marks pods of a job
    whose queue has extendClusters.
    """
    view = JobObject(job)
    spec, status = view.spec, view.status
    job_name = str(view.name)
    task = spec["tasks"][task_index]
    task_name = str(task.get("name") or "")
    template = copy.deepcopy(task.get("template") or {})
    template_meta = template.get("metadata") or {}
    pod_spec: dict[str, Any] = template.get("spec") or {}
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job_name}-{task_name}-{pod_index}",
            "namespace": view.namespace,
            "ownerReferences": [job_ref(job)],
            "labels": dict(template_meta.get("labels") or {}),
            "annotations": dict(template_meta.get("annotations") or {}),
        },
        "spec": pod_spec,
    }
    if not pod_spec.get("schedulerName") and spec.get("schedulerName"):
        pod_spec["schedulerName"] = spec["schedulerName"]
    if not pod_spec.get("priorityClassName") and spec.get("priorityClassName"):
        pod_spec["priorityClassName"] = spec["priorityClassName"]
    _add_volumes(pod, job)

    spec_key = task_name or keys.DEFAULT_TASK_SPEC
    queue = str(spec.get("queue") or "")
    version = status.get("version", 0) if job_version is None else job_version
    retries = status.get("retryCount", 0) if retry_count is None else retry_count
    annotations = pod["metadata"]["annotations"]
    annotations.update(
        {
            keys.TASK_INDEX: str(pod_index),
            keys.TASK_SPEC: spec_key,
            keys.GROUP_NAME: podgroup_name or f"{job_name}-{view.uid}",
            keys.JOB_NAME: job_name,
            keys.QUEUE_NAME: queue,
            keys.JOB_VERSION: str(int(version or 0)),
            keys.TEMPLATE_UID: f"{job_name}-{task_name}",
            keys.JOB_RETRY_COUNT: str(int(retries or 0)),
        }
    )
    if task.get("topologyPolicy"):
        annotations[keys.NUMA_POLICY] = str(task["topologyPolicy"])
    job_annotations = view.annotations
    annotations.update({k: job_annotations[k] for k in _COPIED_ANNOTATIONS if k in job_annotations})
    if keys.JDB_MIN_AVAILABLE in job_annotations:
        annotations[keys.JDB_MIN_AVAILABLE] = job_annotations[keys.JDB_MIN_AVAILABLE]
    elif keys.JDB_MAX_UNAVAILABLE in job_annotations:
        annotations[keys.JDB_MAX_UNAVAILABLE] = job_annotations[keys.JDB_MAX_UNAVAILABLE]

    labels = pod["metadata"]["labels"]
    labels.update(
        {
            keys.TASK_INDEX: str(pod_index),
            keys.JOB_NAME: job_name,
            keys.TASK_SPEC: spec_key,
            keys.JOB_NAMESPACE: str(view.namespace),
            keys.QUEUE_NAME: queue,
        }
    )
    job_labels = view.labels
    labels.update({k: job_labels[k] for k in _COPIED_LABELS if k in job_labels})
    if forwarding:
        annotations[keys.JOB_FORWARDING] = "true"
        labels[keys.JOB_FORWARDING] = "true"
    partition = task.get("partitionPolicy")
    if partition is not None:
        size = int(partition.get("partitionSize") or 0)
        labels[keys.PARTITION_ID] = str(pod_index // size if size > 0 else 0)
    return apply_pod_plugins(job, pod)


def build_pvc(job: Json, volume_index: int, claim_name: str) -> dict[str, Any]:
    """The claim for `spec.volumes[volume_index]` (which has a `volumeClaim` spec), named
    `claim_name` (Volcano's `<job>-pvc-<random12>`, drawn by the shell), owned by the Job."""
    volume = (job.get("spec") or {})["volumes"][volume_index]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": claim_name,
            "namespace": JobObject(job).namespace,
            "ownerReferences": [job_ref(job)],
        },
        "spec": copy.deepcopy(volume.get("volumeClaim") or {}),
    }
