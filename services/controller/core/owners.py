"""Owner references: how every object the controller creates points back at what it serves.

Used by the pod, PodGroup and plugin builders (controller reference to the Job) and by the
PodGroup controller for plain pods; `owned_by` is the check that keeps the controller from
overwriting or deleting objects it did not create.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.volcano import keys
from shared.volcano.objects import JobObject, KubeObject


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
    view = JobObject(job)
    return controller_ref(keys.BATCH_API_VERSION, keys.JOB_KIND, str(view.name), str(view.uid))


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return KubeObject(obj).controller_ref


def owned_by(obj: Mapping[str, Any], owner_uid: str) -> bool:
    """Does `obj` name `owner_uid` among its ownerReferences?"""
    return any(r.get("uid") == owner_uid for r in KubeObject(obj).owner_references)
