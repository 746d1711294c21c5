"""PodGroups for work that is not a Volcano Job, and PodGroup status for every gang.

Volcano's pg-controller: a pod that asks for our scheduler and names no PodGroup gets one
(`podgroup-<owner or pod uid>`) and the shell then annotates the pod with it. Kubeflow's training
operator and KubeRay create their own PodGroups; we only recognise them (`foreign_owner`) and keep
their status like any other with `podgroup_status`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from services.controller.core.owners import controller_of, controller_ref
from services.controller.core.quota import pod_quota_usage, to_resource_list
from shared.volcano import keys
from shared.volcano.objects import KubeObject, PodGroupObject, PodObject

Json = Mapping[str, Any]
PODGROUP_PREFIX = keys.PODGROUP_PREFIX
DEFAULT_SCHEDULER_NAMES = ("volcano",)
# Operators that create PodGroups for their own workloads (kind -> API group of the owner).
FOREIGN_OWNERS = {
    "PyTorchJob": "kubeflow.org",
    "TFJob": "kubeflow.org",
    "MPIJob": "kubeflow.org",
    "XGBoostJob": "kubeflow.org",
    "PaddleJob": "kubeflow.org",
    "JAXJob": "kubeflow.org",
    "RayCluster": "ray.io",
    "RayJob": "ray.io",
}


def podgroup_name_for_pod(pod: Json) -> str:
    """`podgroup-<uid of the pod's controller>`, or `podgroup-<pod uid>` for an orphan pod."""
    owner = controller_of(pod)
    uid = owner.get("uid") if owner else KubeObject(pod).uid
    return f"{PODGROUP_PREFIX}{uid}"


def needs_podgroup(pod: Json, scheduler_names: Collection[str] = DEFAULT_SCHEDULER_NAMES) -> bool:
    """A pod we schedule that names no PodGroup (pods of Volcano Jobs always name theirs)."""
    view = PodObject(pod)
    return view.scheduler_name in scheduler_names and not view.group_name


def _min_member(owner_annotations: Mapping[str, str]) -> int:
    try:
        value = int(owner_annotations.get(keys.GROUP_MIN_MEMBER, "1"))
    except ValueError:
        return 1
    return value if value >= 0 else 1


def _network_topology(annotations: Mapping[str, str]) -> dict[str, Any] | None:
    mode = annotations.get(keys.NETWORK_TOPOLOGY_MODE)
    tier = annotations.get(keys.NETWORK_TOPOLOGY_HIGHEST_TIER)
    if mode is None and tier is None:
        return None
    topology: dict[str, Any] = {"mode": "hard"}
    if mode is not None and mode.lower() in ("hard", "soft"):
        topology["mode"] = mode.lower()
    if tier is not None and tier.lstrip("-").isdigit():
        topology["highestTierAllowed"] = int(tier)
    return topology


def podgroup_for_pod(
    pod: Json,
    owner_annotations: Mapping[str, str] | None = None,
    scheduler_names: Collection[str] = DEFAULT_SCHEDULER_NAMES,
) -> dict[str, Any] | None:
    """The PodGroup Volcano creates for a plain pod, or None when the pod needs none.

    `owner_annotations` are the annotations of the pod's ReplicaSet/DaemonSet/StatefulSet/batch
    Job (the shell reads them): `scheduling.volcano.sh/group-min-member` sets minMember and
    every `volcano.sh/` annotation is inherited.
    """
    if not needs_podgroup(pod, scheduler_names):
        return None
    return _build_for_pod(pod, owner_annotations or {})


def _build_for_pod(pod: Json, inherited: Mapping[str, str]) -> dict[str, Any]:
    view = PodObject(pod)
    annotations, labels, spec = view.annotations, view.labels, view.spec
    min_member = _min_member(inherited)
    owner = controller_of(pod)
    pg_annotations = {k: v for k, v in inherited.items() if k.startswith("volcano.sh/")}
    for key in (keys.PREEMPTABLE, keys.COOLDOWN_TIME, keys.REVOCABLE_ZONE):
        if key in annotations:
            pg_annotations[key] = annotations[key]
    if keys.JDB_MIN_AVAILABLE in annotations:
        pg_annotations[keys.JDB_MIN_AVAILABLE] = annotations[keys.JDB_MIN_AVAILABLE]
    elif keys.JDB_MAX_UNAVAILABLE in annotations:
        pg_annotations[keys.JDB_MAX_UNAVAILABLE] = annotations[keys.JDB_MAX_UNAVAILABLE]
    pg_spec: dict[str, Any] = {
        "minMember": min_member,
        "minResources": to_resource_list(pod_quota_usage(spec) * min_member),
    }
    if spec.get("priorityClassName"):
        pg_spec["priorityClassName"] = spec["priorityClassName"]
    if annotations.get(keys.POD_QUEUE_NAME):
        pg_spec["queue"] = annotations[keys.POD_QUEUE_NAME]
    topology = _network_topology(annotations)
    if topology:
        pg_spec["networkTopology"] = topology
    return {
        "apiVersion": keys.SCHEDULING_API_VERSION,
        "kind": "PodGroup",
        "metadata": {
            "name": podgroup_name_for_pod(pod),
            "namespace": view.namespace,
            "ownerReferences": list(view.owner_references)
            if owner
            else [controller_ref("v1", "Pod", str(view.name), str(view.uid))],
            "annotations": pg_annotations,
            "labels": {k: labels[k] for k in (keys.PREEMPTABLE, keys.COOLDOWN_TIME) if k in labels},
        },
        "spec": pg_spec,
        "status": {"phase": "Pending"},
    }


WORKLOAD_KINDS = frozenset({"ReplicaSet", "StatefulSet"})


def workload_podgroup(
    workload: Json,
    first_pod: Json | None,
    existing: Json | None,
    scheduler_names: Collection[str] = DEFAULT_SCHEDULER_NAMES,
) -> tuple[str, dict[str, Any] | None]:
    """What a ReplicaSet/StatefulSet change means for `podgroup-<workload uid>` (Volcano's
    WorkLoadSupport): ("delete", None) when scaled to zero; ("create" | "update", PodGroup) from
    its first pod when that pod still needs a group (e.g. a changed group-min-member);
    ("none", None) otherwise."""
    if workload.get("kind") not in WORKLOAD_KINDS:
        return "none", None
    replicas = (workload.get("spec") or {}).get("replicas")
    if replicas == 0:
        return "delete", None
    if first_pod is None or not needs_podgroup(first_pod, scheduler_names):
        return "none", None
    desired = _build_for_pod(first_pod, KubeObject(workload).annotations)
    if existing is None:
        return "create", desired
    held = PodGroupObject(existing)
    labels, annotations = desired["metadata"]["labels"], desired["metadata"]["annotations"]
    same_spec = held.spec == desired["spec"]
    same_meta = held.labels == labels and held.annotations == annotations
    if same_spec and same_meta:
        return "none", None
    meta = {**held.meta, "labels": labels, "annotations": annotations}
    return "update", {**existing, "metadata": meta, "spec": desired["spec"]}


def group_annotation_patch(podgroup_name: str) -> dict[str, Any]:
    """The merge patch that links the pod to its new PodGroup."""
    return {"metadata": {"annotations": {keys.GROUP_NAME: podgroup_name}}}


def foreign_owner(podgroup: Json) -> str | None:
    """`kubeflow.org/PyTorchJob`, `ray.io/RayCluster`...: the operator that made this PodGroup."""
    owner = controller_of(podgroup)
    if owner is None:
        return None
    kind = str(owner.get("kind", ""))
    group = str(owner.get("apiVersion", "")).split("/", 1)[0]
    if FOREIGN_OWNERS.get(kind) == group:
        return f"{group}/{kind}"
    return None


def pods_of_podgroup(podgroup: Json, pods: Iterable[Json]) -> list[Json]:
    group = PodGroupObject(podgroup)
    return [
        p for p in pods if (pod := PodObject(p)).group_name == group.name and pod.namespace == group.namespace
    ]


def podgroup_status(
    podgroup: Json,
    pods: Iterable[Json],
    *,
    admitted: bool = False,
    unschedulable_now: bool = False,
) -> dict[str, Any]:
    """PodGroup status as Volcano's scheduler closes a session: phase, counters, conditions kept.

    A pod counts as scheduled once bound (nodeName) or past Pending. With at least minMember
    scheduled the gang is Running, or Completed when every scheduled pod finished; short of
    that it is Pending, unless the scheduler admitted it (`admitted`, the enqueue decision) or
    had already (Inqueue stays Inqueue). A gang
    with running pods found unschedulable in this session (`unschedulable_now`) is Unknown, and
    stays so while it runs short of minMember.
    """
    status = dict(podgroup.get("status") or {})
    members = pods_of_podgroup(podgroup, pods)
    phases = [str((p.get("status") or {}).get("phase") or "Pending") for p in members]
    # As Volcano's scheduler counts a gang: allocated or Succeeded members. A Failed pod that a
    # resumed job keeps does not fill the gang, or the new PodGroup would read Completed at once
    # and its fresh pods would never be placed.
    scheduled = [
        phase
        for p, phase in zip(members, phases, strict=True)
        if phase != "Failed" and ((p.get("spec") or {}).get("nodeName") or phase != "Pending")
    ]
    running = phases.count("Running")
    min_member = int((podgroup.get("spec") or {}).get("minMember") or 0)
    # A gang whose every member finished is Completed (a gang of zero, at once).
    everything_finished = (bool(phases) or min_member == 0) and all(
        ph in ("Succeeded", "Failed") for ph in phases
    )
    current = status.get("phase") or "Pending"
    if running and (unschedulable_now or (current == "Unknown" and len(scheduled) < min_member)):
        # The scheduler announces a verdict when it changes, not every session as Volcano writes
        # the condition: an Unknown gang stays Unknown until it is whole again or stops running.
        phase = "Unknown"
    elif everything_finished:
        phase = "Completed"
    elif len(scheduled) >= min_member:
        phase = "Running"
    else:
        phase = "Inqueue" if admitted or current == "Inqueue" else "Pending"
    status.update(
        {
            "phase": phase,
            "running": running,
            "succeeded": phases.count("Succeeded"),
            "failed": phases.count("Failed"),
        }
    )
    status["conditions"] = list(status.get("conditions") or ())
    return status
