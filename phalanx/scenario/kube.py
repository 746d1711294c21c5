"""The runner's Kubernetes client: objects of any kind as plain dicts, over the official client.

Steps, probes, the observer and `ExternalStack` talk to the cluster only through `Kube`. It maps
a kind name to its API with a table of the kinds the project serves (a Job is Volcano's), falling
back to discovery for any other kind; failures surface as `KubeError` carrying the API's status
message, which is what a `denied` expectation compares. The simulator's control API (the verbs
Kubernetes has none for: end a pod, make a node NotReady) is reached with `control`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from kubernetes import config as _config
from kubernetes import dynamic as _dynamic
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import DynamicApiError, ResourceNotFoundError

# The kinds scenarios use, by name: which API serves each (a scenario's "Job" is Volcano's).
KIND_API_VERSIONS: dict[str, str] = {
    "Pod": "v1",
    "Service": "v1",
    "ConfigMap": "v1",
    "Secret": "v1",
    "Namespace": "v1",
    "Node": "v1",
    "Event": "v1",
    "PersistentVolumeClaim": "v1",
    "PersistentVolume": "v1",
    "StorageClass": "storage.k8s.io/v1",
    "DeviceClass": "resource.k8s.io/v1",
    "ResourceClaim": "resource.k8s.io/v1",
    "ResourceClaimTemplate": "resource.k8s.io/v1",
    "ResourceSlice": "resource.k8s.io/v1",
    "PriorityClass": "scheduling.k8s.io/v1",
    "NetworkPolicy": "networking.k8s.io/v1",
    "PodDisruptionBudget": "policy/v1",
    "Job": "batch.volcano.sh/v1alpha1",
    "PodGroup": "scheduling.volcano.sh/v1beta1",
    "Queue": "scheduling.volcano.sh/v1beta1",
    "Command": "bus.volcano.sh/v1alpha1",
    "HyperNode": "topology.volcano.sh/v1alpha1",
    "Deployment": "apps/v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "RayCluster": "ray.io/v1",
    "PyTorchJob": "kubeflow.org/v1",
    "TFJob": "kubeflow.org/v1",
    "MPIJob": "kubeflow.org/v1",
}

Obj = dict[str, Any]
# The client is untyped; reaching it through Any keeps the rest of this module strictly typed.
config: Any = _config
dynamic: Any = _dynamic


class KubeError(Exception):
    """A request the API refused or could not serve; `message` is the API's own words."""

    def __init__(self, status: int | None, reason: str, message: str) -> None:
        self.status, self.reason, self.message = status, reason, message
        super().__init__(f"{status or 'error'} {reason}: {message}".strip())

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409


def _kube_error(error: Exception) -> KubeError:
    if isinstance(error, DynamicApiError | ApiException):
        body = getattr(error, "body", None)
        try:
            status = json.loads(body) if body else {}
        except (TypeError, ValueError):
            status = {}
        message = status.get("message") if isinstance(status, dict) else None
        return KubeError(error.status, str(error.reason or ""), message or str(body or error))
    return KubeError(None, type(error).__name__, str(error))


class Kube:
    """One connection to a Kubernetes API (and the simulator's control API beside it)."""

    def __init__(self, kubeconfig: Path, simulator_url: str | None = None) -> None:
        self.api_client: Any = config.new_client_from_config(config_file=str(kubeconfig))
        self._dynamic = dynamic.DynamicClient(self.api_client)
        self._simulator_url = simulator_url
        self._lock = threading.Lock()

    def close(self) -> None:
        self.api_client.close()

    # -- kinds -------------------------------------------------------------------------------

    def resource(self, kind: str, api_version: str | None = None) -> Any:
        version = api_version or KIND_API_VERSIONS.get(kind)
        try:
            with self._lock:  # the discoverer's cache is not safe to fill from two threads
                if version is not None:
                    return self._dynamic.resources.get(api_version=version, kind=kind)
                return self._dynamic.resources.get(kind=kind)
        except ResourceNotFoundError:
            raise KubeError(404, "NotFound", f"the server does not serve kind {kind}") from None
        except Exception as error:
            raise _kube_error(error) from None

    def namespaced(self, kind: str) -> bool:
        return bool(self.resource(kind).namespaced)

    # -- reading -----------------------------------------------------------------------------

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        resource = self.resource(kind)
        try:
            found = resource.get(name=name, namespace=namespace if resource.namespaced else None)
        except (DynamicApiError, ApiException) as error:
            if error.status == 404:
                return None
            raise _kube_error(error) from None
        return dict(found.to_dict())

    def list_objects(self, kind: str, namespace: str | None = None, selector: str | None = None) -> list[Obj]:
        resource = self.resource(kind)
        try:
            found = resource.get(
                namespace=namespace if resource.namespaced else None, label_selector=selector
            )
        except (DynamicApiError, ApiException) as error:
            raise _kube_error(error) from None
        listed = found.to_dict()
        return list(listed.get("items") or [])

    def watch(self, kind: str, resource_version: str, timeout: int) -> Iterator[tuple[str, Obj]]:
        """(type, object) events after `resource_version`, for at most `timeout` seconds."""
        resource = self.resource(kind)
        try:
            for event in resource.watch(resource_version=resource_version, timeout=timeout):
                raw = event.get("raw_object")
                if isinstance(raw, dict):
                    yield str(event.get("type")), raw
        except (DynamicApiError, ApiException) as error:
            raise _kube_error(error) from None

    def list_with_version(self, kind: str) -> tuple[list[Obj], str]:
        resource = self.resource(kind)
        try:
            found = resource.get().to_dict()
        except (DynamicApiError, ApiException) as error:
            raise _kube_error(error) from None
        version = str((found.get("metadata") or {}).get("resourceVersion") or "")
        return list(found.get("items") or []), version

    # -- writing -----------------------------------------------------------------------------

    def _call(self, method: str, resource: Any, **kwargs: Any) -> Obj:
        try:
            answer = getattr(resource, method)(**kwargs)
        except (DynamicApiError, ApiException) as error:
            raise _kube_error(error) from None
        except Exception as error:  # connection refused, timeouts: the step cannot be done
            raise _kube_error(error) from None
        return dict(answer.to_dict()) if answer is not None else {}

    def _namespace(self, resource: Any, namespace: str | None) -> str | None:
        return (namespace or "default") if resource.namespaced else None

    def create(self, obj: Obj) -> Obj:
        resource = self.resource(obj.get("kind", ""), obj.get("apiVersion"))
        namespace = self._namespace(resource, (obj.get("metadata") or {}).get("namespace"))
        return self._call("create", resource, body=obj, namespace=namespace)

    def apply(self, obj: Obj) -> Obj:
        """Create the object, or merge it into the existing one (as `kubectl apply` would)."""
        try:
            return self.create(obj)
        except KubeError as error:
            if not error.conflict:
                raise
        metadata = obj.get("metadata") or {}
        return self.merge_patch(
            obj.get("kind", ""),
            metadata.get("namespace"),
            metadata.get("name", ""),
            obj,
            api_version=obj.get("apiVersion"),
        )

    def merge_patch(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        patch: Obj,
        api_version: str | None = None,
    ) -> Obj:
        resource = self.resource(kind, api_version)
        return self._call(
            "patch",
            resource,
            body=patch,
            name=name,
            namespace=self._namespace(resource, namespace),
            content_type="application/merge-patch+json",
        )

    def delete(self, kind: str, namespace: str | None, name: str, grace_seconds: int | None = None) -> None:
        resource = self.resource(kind)
        body = {} if grace_seconds is None else {"gracePeriodSeconds": grace_seconds}
        self._call(
            "delete",
            resource,
            name=name,
            namespace=self._namespace(resource, namespace),
            body=body,
        )

    def evict(self, namespace: str, name: str) -> None:
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        try:
            self._dynamic.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction", body=body)
        except Exception as error:
            raise _kube_error(error) from None

    # -- the simulator's control API ------------------------------------------------------------

    def control(self, path: str, body: Obj | None = None, method: str = "POST") -> Any:
        """`/simulator/v1/...` on the simulator; KubeError when it refuses."""
        if not self._simulator_url:
            raise KubeError(None, "NoSimulator", f"{path} needs the simulator's control API")
        url = self._simulator_url.rstrip("/") + path
        try:
            response = httpx.request(method, url, json=body or {}, timeout=30)
        except httpx.HTTPError as error:
            raise KubeError(None, type(error).__name__, f"{url}: {error}") from None
        try:
            answer = response.json()
        except ValueError:
            answer = {"message": response.text}
        if response.status_code >= 400:
            message = answer.get("message") if isinstance(answer, dict) else None
            raise KubeError(response.status_code, response.reason_phrase, message or str(answer))
        return answer
