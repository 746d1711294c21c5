"""The catalogue of resource types the simulated apiserver serves, and its discovery documents.

Every request is first resolved here to a `Kind` (group, version, plural, scope, subresources);
the store keys objects by its plural and the HTTP layer serves `/api`, `/apis` and the resource
lists from the same table, so kubectl's discovery, short names (`vcjob`, `pg`, `q`) and scope
agree with what the store does. Volcano's CRDs are served as built-in types: no CRD objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    has_status: bool = False
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def group_version(self) -> str:
        return self.api_version


KINDS: tuple[Kind, ...] = (
    Kind("", "v1", "namespaces", "Namespace", False, ("ns",), has_status=True),
    Kind("", "v1", "nodes", "Node", False, ("no",), has_status=True),
    Kind("", "v1", "pods", "Pod", True, ("po",), has_status=True, categories=("all",)),
    Kind("", "v1", "services", "Service", True, ("svc",), has_status=True, categories=("all",)),
    Kind("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
    Kind("", "v1", "secrets", "Secret", True),
    Kind("", "v1", "events", "Event", True, ("ev",)),
    Kind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",), True),
    Kind("", "v1", "persistentvolumes", "PersistentVolume", False, ("pv",), True),
    Kind("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ("sc",)),
    # Dynamic Resource Allocation: the kubelets publish slices, the stand-in in `dra` makes claims.
    Kind("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False),
    Kind("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True, (), True),
    Kind("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True),
    Kind("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False),
    Kind("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",)),
    Kind("coordination.k8s.io", "v1", "leases", "Lease", True),
    Kind("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, ("netpol",)),
    Kind("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",), has_status=True),
    Kind(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        False,
    ),
    Kind(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        False,
    ),
    Kind("batch.volcano.sh", "v1alpha1", "jobs", "Job", True, ("vcjob", "vj"), has_status=True),
    Kind(
        "scheduling.volcano.sh",
        "v1beta1",
        "podgroups",
        "PodGroup",
        True,
        ("pg", "podgroup-v1beta1"),
    ),
    Kind("scheduling.volcano.sh", "v1beta1", "queues", "Queue", False, ("q", "queue-v1beta1"), True),
    Kind("bus.volcano.sh", "v1alpha1", "commands", "Command", True),
    Kind("topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode", False, ("hn",), has_status=True),
    # Workloads and operators' CRDs, run by the stand-in controllers in `workloads` and `operators`.
    Kind("apps", "v1", "deployments", "Deployment", True, ("deploy",), True, ("all",)),
    Kind("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",), True, ("all",)),
    Kind("apps", "v1", "statefulsets", "StatefulSet", True, ("sts",), True, ("all",)),
    Kind("ray.io", "v1", "rayclusters", "RayCluster", True, (), True),
    Kind("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", True, (), True),
    Kind("kubeflow.org", "v1", "tfjobs", "TFJob", True, (), True),
    Kind("kubeflow.org", "v1", "mpijobs", "MPIJob", True, (), True),
)

BY_PATH: dict[tuple[str, str, str], Kind] = {(k.group, k.version, k.plural): k for k in KINDS}
BY_KIND: dict[tuple[str, str], Kind] = {(k.api_version, k.kind): k for k in KINDS}
# Reading a kind by name alone (scenario steps, the control API) is unambiguous except for
# "Job", which in this cluster can only be Volcano's: batch/v1 is not served.
BY_KIND_NAME: dict[str, Kind] = {k.kind: k for k in KINDS}

PODS = BY_PATH[("", "v1", "pods")]
SERVICES = BY_PATH[("", "v1", "services")]
PODGROUPS = BY_PATH[("scheduling.volcano.sh", "v1beta1", "podgroups")]
NODES = BY_PATH[("", "v1", "nodes")]
NAMESPACES = BY_PATH[("", "v1", "namespaces")]
EVENTS = BY_PATH[("", "v1", "events")]
PDBS = BY_PATH[("policy", "v1", "poddisruptionbudgets")]
MUTATING_WEBHOOKS = BY_PATH[("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations")]
VALIDATING_WEBHOOKS = BY_PATH[("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations")]

_SCALE = {"kind": "Scale", "verbs": ["get", "patch", "update"], "group": "autoscaling", "version": "v1"}
# Subresources with their own verbs and kinds, as /api/v1 lists them.
_SUBRESOURCES: dict[str, list[dict[str, Any]]] = {
    **{
        plural: [{"name": f"{plural}/scale", **_SCALE}]
        for plural in ("deployments", "replicasets", "statefulsets")
    },
    "pods": [
        {"name": "pods/binding", "kind": "Binding", "verbs": ["create"]},
        {
            "name": "pods/eviction",
            "kind": "Eviction",
            "verbs": ["create"],
            "group": "policy",
            "version": "v1",
        },
    ],
}


def groups() -> dict[str, list[str]]:
    """Group name to its served versions, in catalogue order."""
    found: dict[str, list[str]] = {}
    for kind in KINDS:
        versions = found.setdefault(kind.group, [])
        if kind.version not in versions:
            versions.append(kind.version)
    return found


def version_info() -> dict[str, Any]:
    return {
        "major": "1",
        "minor": "31",
        "gitVersion": "v1.31.0-phalanx-simulator",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.22.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def core_versions() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }


def _group_entry(name: str, versions: list[str]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": listed, "preferredVersion": listed[0]}


def group_list() -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group_entry(g, v) for g, v in groups().items() if g],
    }


def group_document(group: str) -> dict[str, Any] | None:
    versions = groups().get(group)
    if not group or versions is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, versions)}


def resource_list(group: str, version: str) -> dict[str, Any] | None:
    served = [k for k in KINDS if k.group == group and k.version == version]
    if not served:
        return None
    resources: list[dict[str, Any]] = []
    for kind in served:
        entry: dict[str, Any] = {
            "name": kind.plural,
            "singularName": kind.singular,
            "namespaced": kind.namespaced,
            "kind": kind.kind,
            "verbs": list(_ALL_VERBS),
        }
        if kind.short_names:
            entry["shortNames"] = list(kind.short_names)
        if kind.categories:
            entry["categories"] = list(kind.categories)
        resources.append(entry)
        if kind.has_status:
            resources.append(
                {
                    "name": f"{kind.plural}/status",
                    "singularName": "",
                    "namespaced": kind.namespaced,
                    "kind": kind.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        resources.extend(
            {"singularName": "", "namespaced": kind.namespaced, **sub}
            for sub in _SUBRESOURCES.get(kind.plural, [])
        )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": served[0].api_version,
        "resources": resources,
    }
