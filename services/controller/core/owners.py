"""Owner references: how every object the controller creates points back at what it serves.

Used by the pod, PodGroup and plugin builders (controller reference to the Job) and by the
PodGroup controller for plain pods; `owned_by` is the check that keeps the controller from
overwriting or deleting objects it did not create.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.controller.core import keys


def controller_ref(api_version: str, kind: str, name: str, uid: str) -> dict[str, Any]:
    """metav1.NewControllerRef: controller and blockOwnerDeletion both true."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def job_ref(job: Mapping[str, Any]) -> dict[str, Any]:
    meta = job.get("metadata") or {}
    return controller_ref(
        keys.BATCH_API_VERSION, keys.JOB_KIND, str(meta.get("name", "")), str(meta.get("uid", ""))
    )


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return next((r for r in refs if r.get("controller")), None)


def owned_by(obj: Mapping[str, Any], owner_uid: str) -> bool:
    """Does `obj` name `owner_uid` among its ownerReferences?"""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return any(r.get("uid") == owner_uid for r in refs)
