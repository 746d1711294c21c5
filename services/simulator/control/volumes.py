"""A stand-in for Kubernetes' PersistentVolume controller and the scheduler's volume binder.

kube-controller-manager binds a PersistentVolumeClaim to a PersistentVolume; for a claim whose
StorageClass says `volumeBindingMode: WaitForFirstConsumer`, kube-scheduler's VolumeBinding
plugin first chooses the node and then binds the claim to a volume that node can reach. The
simulator has no provisioner, so only pre-created volumes bind:

- `choose_volume` is the pure rule: among volumes that are Available (or already promised to the
  claim), of the claim's class, with every access mode the claim asks for, at least the storage it
  requests, its volumeMode, matching its selector and (for a node) whose nodeAffinity admits the
  node, the smallest; Kubernetes' `FindMatchingVolume` picks the same way.
- `VolumeBinder` keeps claims bound from the store's events: an Immediate claim as soon as a volume
  matches, a WaitForFirstConsumer claim once a pod that mounts it is bound to a node. Binding
  writes the volume's `spec.claimRef` and phase Bound, then the claim's `spec.volumeName`, the
  bind-completed annotation and phase Bound, through `Operations` as the real controller's
  requests would. A claim that nothing matches stays Pending, as in Kubernetes.

A pod is not held back by the kubelet for an unbound claim (the real kubelet waits to mount it);
the Phalanx scheduler does not bind such a pod, the simulator's default scheduler ignores volumes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from services.simulator.admission.operations import Operations
from services.simulator.control.work_queue import Resync
from services.simulator.store.api_resources import BY_PATH, NODES, PODS, Kind
from services.simulator.store.history import WatchEvent
from services.simulator.store.selectors import from_label_selector_object
from services.simulator.store.store import Store
from shared.domain.resources import Resources

Obj = dict[str, Any]

CLAIMS = BY_PATH[("", "v1", "persistentvolumeclaims")]
VOLUMES = BY_PATH[("", "v1", "persistentvolumes")]
STORAGE_CLASSES = BY_PATH[("storage.k8s.io", "v1", "storageclasses")]

WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"


def storage(quantities: Mapping[str, Any] | None) -> int:
    return Resources.parse({"storage": (quantities or {}).get("storage") or 0})["storage"]


def claim_class(claim: Obj, classes: Iterable[Obj]) -> str:
    """The claim's storageClassName; unset means the cluster's default class, as the
    DefaultStorageClass admission plugin would have written it."""
    named = (claim.get("spec") or {}).get("storageClassName")
    if named is not None:
        return str(named)
    for found in classes:
        if (found["metadata"].get("annotations") or {}).get(DEFAULT_CLASS) == "true":
            return str(found["metadata"]["name"])
    return ""


def binding_mode(class_name: str, classes: Iterable[Obj]) -> str:
    for found in classes:
        if found["metadata"]["name"] == class_name:
            return str(found.get("volumeBindingMode") or "Immediate")
    return "Immediate"


def node_admits(volume: Obj, node: Obj) -> bool:
    """The volume's required nodeAffinity holds for the node (no affinity: every node)."""
    required = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required")
    if not required:
        return True
    labels = node["metadata"].get("labels") or {}
    for term in required.get("nodeSelectorTerms") or ():
        expressions = (term or {}).get("matchExpressions") or []
        fields = (term or {}).get("matchFields") or []
        if not expressions and not fields:
            continue  # an empty term matches no node
        by_label = from_label_selector_object({"matchExpressions": expressions}) if expressions else None
        by_field = from_label_selector_object({"matchExpressions": fields}) if fields else None
        if (by_label is None or by_label.matches_labels(labels)) and (
            by_field is None or by_field.matches_labels({"metadata.name": node["metadata"]["name"]})
        ):
            return True
    return False


def _promised_to(volume: Obj, claim: Obj) -> bool:
    ref = (volume.get("spec") or {}).get("claimRef")
    if not ref:
        return False
    meta = claim["metadata"]
    same = ref.get("namespace") == meta.get("namespace") and ref.get("name") == meta["name"]
    return same and ref.get("uid") in (None, "", meta.get("uid"))


def choose_volume(claim: Obj, volumes: Iterable[Obj], class_name: str, node: Obj | None) -> Obj | None:
    """The volume the claim binds to (on `node`, when it waited for its first consumer), or None."""
    spec = claim.get("spec") or {}
    wanted_modes = set(spec.get("accessModes") or ())
    wanted_size = storage((spec.get("resources") or {}).get("requests"))
    wanted_mode = spec.get("volumeMode") or "Filesystem"
    selector = from_label_selector_object(spec.get("selector")) if spec.get("selector") else None
    fitting: list[tuple[int, str, Obj]] = []
    for volume in volumes:
        vspec = volume.get("spec") or {}
        if volume["metadata"].get("deletionTimestamp"):
            continue
        if vspec.get("claimRef") and not _promised_to(volume, claim):
            continue
        if spec.get("volumeName") and volume["metadata"]["name"] != spec["volumeName"]:
            continue
        if str(vspec.get("storageClassName") or "") != class_name:
            continue
        if not wanted_modes <= set(vspec.get("accessModes") or ()):
            continue
        if (vspec.get("volumeMode") or "Filesystem") != wanted_mode:
            continue
        size = storage(vspec.get("capacity"))
        if size < wanted_size:
            continue
        if selector is not None and not selector.matches_labels(volume["metadata"].get("labels")):
            continue
        if node is not None and not node_admits(volume, node):
            continue
        fitting.append((size, volume["metadata"]["name"], volume))
    return min(fitting, key=lambda entry: entry[:2])[2] if fitting else None


def claims_of(pod: Obj) -> list[str]:
    return [
        str(volume["persistentVolumeClaim"]["claimName"])
        for volume in (pod.get("spec") or {}).get("volumes") or ()
        if (volume or {}).get("persistentVolumeClaim", {}).get("claimName")
    ]


def consumer_node(claim: Obj, pods: Iterable[Obj]) -> str | None:
    """The node of the first bound pod that mounts the claim (the WaitForFirstConsumer trigger)."""
    name = claim["metadata"]["name"]
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and not pod["metadata"].get("deletionTimestamp") and name in claims_of(pod):
            return str(node)
    return None


class VolumeBinder(Resync):
    """Binds pending claims whenever a claim, volume, class or pod changes."""

    def __init__(self, store: Store, operations: Operations, **options: Any) -> None:
        super().__init__("volume binder", **options)
        self._store, self._operations = store, operations
        for kind in (CLAIMS, VOLUMES, STORAGE_CLASSES, PODS):
            store.subscribe(kind, self._on_event)

    def _on_event(self, event: WatchEvent) -> None:
        if event.kind is PODS and not claims_of(event.object):
            return
        self.mark()

    async def reconcile(self) -> None:
        await self._bind_pending()

    async def _bind_pending(self) -> None:
        store = self._store
        classes = list(store.iterate(STORAGE_CLASSES))
        await self._mark_available()
        for claim in list(store.iterate(CLAIMS)):
            phase = (claim.get("status") or {}).get("phase")
            if claim["metadata"].get("deletionTimestamp") or phase == "Bound":
                continue
            if not phase:  # what kube-apiserver's strategy writes on create
                claim = await self._write_status(CLAIMS, claim, {"phase": "Pending"})
            class_name = claim_class(claim, classes)
            node = None
            if binding_mode(class_name, classes) == WAIT_FOR_FIRST_CONSUMER:
                node_name = consumer_node(claim, store.iterate(PODS, claim["metadata"].get("namespace")))
                node = store.find(NODES, "", node_name) if node_name else None
                if node is None:
                    continue
            volume = choose_volume(claim, store.iterate(VOLUMES), class_name, node)
            if volume is not None:
                await self._bind(claim, volume, class_name, node)

    async def _mark_available(self) -> None:
        """A new volume with no claim is Available (the controller's first sync)."""
        for volume in list(self._store.iterate(VOLUMES)):
            if not (volume.get("status") or {}).get("phase") and not (volume.get("spec") or {}).get(
                "claimRef"
            ):
                await self._write_status(VOLUMES, volume, {"phase": "Available"})

    async def _write_status(self, kind: Kind, obj: Obj, status: Obj) -> Obj:
        meta = obj["metadata"]
        return await self._operations.update(
            kind, meta.get("namespace", ""), meta["name"], {**obj, "status": status}, status_only=True
        )

    async def _bind(self, claim: Obj, volume: Obj, class_name: str, node: Obj | None) -> None:
        ops, meta = self._operations, claim["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        reference = {
            "kind": "PersistentVolumeClaim",
            "namespace": namespace,
            "name": name,
            "uid": meta["uid"],
            "apiVersion": "v1",
            "resourceVersion": meta.get("resourceVersion"),
        }
        volume_name = volume["metadata"]["name"]
        volume_meta = {**volume["metadata"]}
        volume_meta["annotations"] = {**(volume_meta.get("annotations") or {}), BOUND_BY_CONTROLLER: "yes"}
        written = await ops.update(
            VOLUMES,
            "",
            volume_name,
            {**volume, "metadata": volume_meta, "spec": {**volume["spec"], "claimRef": reference}},
        )
        await self._write_status(VOLUMES, written, {"phase": "Bound"})
        annotations = {**(meta.get("annotations") or {}), BIND_COMPLETED: "yes", BOUND_BY_CONTROLLER: "yes"}
        if node is not None:
            annotations[SELECTED_NODE] = node["metadata"]["name"]
        spec = {**claim["spec"], "volumeName": volume_name, "storageClassName": class_name}
        written = await ops.update(
            CLAIMS, namespace, name, {**claim, "metadata": {**meta, "annotations": annotations}, "spec": spec}
        )
        vspec = volume.get("spec") or {}
        status = {
            "phase": "Bound",
            "accessModes": list(vspec.get("accessModes") or ()),
            "capacity": dict(vspec.get("capacity") or {}),
        }
        await self._write_status(CLAIMS, written, status)
