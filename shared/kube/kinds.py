"""Where each kind Phalanx touches lives in the Kubernetes API, and how to build its URLs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    kind: str
    api_version: str
    plural: str
    namespaced: bool

    @property
    def base(self) -> str:
        return f"/api/{self.api_version}" if "/" not in self.api_version else f"/apis/{self.api_version}"

    def collection(self, namespace: str | None = None) -> str:
        if self.namespaced and namespace:
            return f"{self.base}/namespaces/{namespace}/{self.plural}"
        return f"{self.base}/{self.plural}"

    def item(self, namespace: str | None, name: str, subresource: str = "") -> str:
        path = f"{self.collection(namespace)}/{name}"
        return f"{path}/{subresource}" if subresource else path


KINDS: dict[str, Kind] = {
    k.kind: k
    for k in (
        Kind("Namespace", "v1", "namespaces", False),
        Kind("Node", "v1", "nodes", False),
        Kind("Pod", "v1", "pods", True),
        Kind("Service", "v1", "services", True),
        Kind("ConfigMap", "v1", "configmaps", True),
        Kind("Secret", "v1", "secrets", True),
        Kind("Event", "v1", "events", True),
        Kind("PersistentVolumeClaim", "v1", "persistentvolumeclaims", True),
        Kind("PersistentVolume", "v1", "persistentvolumes", False),
        Kind("StorageClass", "storage.k8s.io/v1", "storageclasses", False),
        Kind("DeviceClass", "resource.k8s.io/v1", "deviceclasses", False),
        Kind("ResourceClaim", "resource.k8s.io/v1", "resourceclaims", True),
        Kind("ResourceClaimTemplate", "resource.k8s.io/v1", "resourceclaimtemplates", True),
        Kind("ResourceSlice", "resource.k8s.io/v1", "resourceslices", False),
        Kind("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", False),
        Kind("NetworkPolicy", "networking.k8s.io/v1", "networkpolicies", True),
        Kind("Lease", "coordination.k8s.io/v1", "leases", True),
        Kind(
            "ValidatingWebhookConfiguration",
            "admissionregistration.k8s.io/v1",
            "validatingwebhookconfigurations",
            False,
        ),
        Kind(
            "MutatingWebhookConfiguration",
            "admissionregistration.k8s.io/v1",
            "mutatingwebhookconfigurations",
            False,
        ),
        Kind("ReplicaSet", "apps/v1", "replicasets", True),
        Kind("StatefulSet", "apps/v1", "statefulsets", True),
        Kind("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", True),
        Kind("Job", "batch.volcano.sh/v1alpha1", "jobs", True),
        Kind("PodGroup", "scheduling.volcano.sh/v1beta1", "podgroups", True),
        Kind("Queue", "scheduling.volcano.sh/v1beta1", "queues", False),
        Kind("Command", "bus.volcano.sh/v1alpha1", "commands", True),
        Kind("HyperNode", "topology.volcano.sh/v1alpha1", "hypernodes", False),
    )
}


def of(obj: dict[str, object]) -> Kind:
    return KINDS[str(obj["kind"])]
