"""The kinds the watcher lists and watches, and where each lives in the Kubernetes API."""

from __future__ import annotations

from dataclasses import dataclass

from shared.kube.kinds import KINDS


@dataclass(frozen=True)
class WatchedKind:
    kind: str
    path: str  # the collection path listed and watched


WATCHED: tuple[WatchedKind, ...] = (
    *(
        WatchedKind(kind, KINDS[kind].collection())
        for kind in (
            "Node",
            "Queue",
            "PriorityClass",
            "PodGroup",
            "Job",
            "Command",
            "Pod",
            # For the PodGroups of their pods: group-min-member and scale-to-zero, as Volcano reads them.
            "ReplicaSet",
            "StatefulSet",
            # For the pdb plugin: which pods a preemption or reclaim may not take (disruptionsAllowed).
            "PodDisruptionBudget",
            # Where pods' claims can bind: the scheduler's VolumeBinding filter.
            "PersistentVolumeClaim",
            "PersistentVolume",
            "StorageClass",
            # What a pod's DRA claims can be given: the scheduler's device allocator.
            "DeviceClass",
            "ResourceClaim",
            "ResourceSlice",
            # The network topology: where a gang with a networkTopology may be placed.
            "HyperNode",
        )
    ),
    # The scheduler's and the controller's configurations (volcano-scheduler.conf,
    # volcano-controller.conf), where Volcano keeps them.
    WatchedKind("ConfigMap", KINDS["ConfigMap"].collection("volcano-system")),
)
