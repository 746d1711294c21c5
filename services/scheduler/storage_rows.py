"""Pure: PersistentVolumeClaims, PersistentVolumes and StorageClasses as the scheduler keeps them,
and back into the core's `ClaimInfo` / `VolumeInfo` (services/scheduler/core/volumes.py).

`projection.project` stores `storage_fields(kind, obj)` in the `storage_objects` row keyed
`storage_key`; the snapshot reader turns the live rows into a `StorageView` once per cycle and asks
it for each task whose pod mounts claims (the pod's `claims` placement field).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from services.scheduler.core.volumes import ClaimInfo, VolumeInfo, VolumeNeed, volume_needs
from shared.domain.resources import Resources
from shared.volcano.objects import KubeObject

STORAGE_KINDS = ("PersistentVolumeClaim", "PersistentVolume", "StorageClass")
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"


def storage_key(kind: str, namespace: str, name: str) -> str:
    return f"{kind}/{namespace}/{name}"


def _storage(quantities: Mapping[str, Any] | None) -> int:
    return Resources.parse({"storage": (quantities or {}).get("storage") or 0})["storage"]


def storage_fields(kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    view = KubeObject(obj)
    spec = view.spec
    if kind == "StorageClass":
        return {
            "bindingMode": obj.get("volumeBindingMode") or "Immediate",
            "default": view.annotation(DEFAULT_CLASS) == "true",
        }
    if kind == "PersistentVolumeClaim":
        return {
            "storageClass": spec.get("storageClassName"),
            "volumeName": spec.get("volumeName") or "",
            "accessModes": sorted(spec.get("accessModes") or ()),
            "request": _storage((spec.get("resources") or {}).get("requests")),
            "volumeMode": spec.get("volumeMode") or "Filesystem",
        }
    ref = spec.get("claimRef") or None
    required = (spec.get("nodeAffinity") or {}).get("required")
    return {
        "storageClass": spec.get("storageClassName") or "",
        "capacity": _storage(spec.get("capacity")),
        "accessModes": sorted(spec.get("accessModes") or ()),
        "volumeMode": spec.get("volumeMode") or "Filesystem",
        "claimedBy": [ref.get("namespace") or "", ref.get("name") or ""] if ref else None,
        "nodeTerms": list(required.get("nodeSelectorTerms") or ()) if required else None,
    }


@dataclass(frozen=True)
class StorageView:
    claims: Mapping[tuple[str, str], ClaimInfo]
    volumes: tuple[VolumeInfo, ...]
    binding_modes: Mapping[str, str]

    def needs(self, namespace: str, claim_names: Iterable[str]) -> tuple[VolumeNeed, ...]:
        return volume_needs(namespace, list(claim_names), self.claims, self.volumes, self.binding_modes)


def storage_view(rows: Iterable[Any]) -> StorageView:
    """From live `storage_objects` rows (anything with `.key`, `.kind` and `.fields`)."""
    by_kind: dict[str, list[tuple[str, str, Mapping[str, Any]]]] = {kind: [] for kind in STORAGE_KINDS}
    for row in rows:
        _, namespace, name = str(row.key).split("/", 2)
        by_kind.setdefault(row.kind, []).append((namespace, name, row.fields or {}))
    classes = by_kind["StorageClass"]
    modes = {name: str(fields.get("bindingMode")) for _, name, fields in classes}
    default = next((name for _, name, fields in classes if fields.get("default")), "")
    claims = {
        (namespace, name): ClaimInfo(
            namespace,
            name,
            # Unset means the default class, as the DefaultStorageClass admission plugin writes it.
            default if fields.get("storageClass") is None else str(fields["storageClass"]),
            str(fields.get("volumeName") or ""),
            frozenset(fields.get("accessModes") or ()),
            int(fields.get("request") or 0),
            str(fields.get("volumeMode") or "Filesystem"),
        )
        for namespace, name, fields in by_kind["PersistentVolumeClaim"]
    }
    volumes = tuple(
        VolumeInfo(
            name,
            str(fields.get("storageClass") or ""),
            int(fields.get("capacity") or 0),
            frozenset(fields.get("accessModes") or ()),
            str(fields.get("volumeMode") or "Filesystem"),
            tuple(fields["claimedBy"]) if fields.get("claimedBy") else None,
            tuple(fields["nodeTerms"]) if fields.get("nodeTerms") is not None else None,
        )
        for _, name, fields in sorted(by_kind["PersistentVolume"], key=lambda entry: entry[1])
    )
    return StorageView(claims, volumes, modes)


def claim_names(pod_spec: Mapping[str, Any]) -> list[str]:
    """The claims a pod mounts (spec.volumes[].persistentVolumeClaim.claimName)."""
    return [
        str(volume["persistentVolumeClaim"]["claimName"])
        for volume in pod_spec.get("volumes") or ()
        if isinstance(volume, dict) and (volume.get("persistentVolumeClaim") or {}).get("claimName")
    ]
