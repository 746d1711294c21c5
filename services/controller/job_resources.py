"""Shell: the objects a Volcano Job owns besides its pods — its PodGroup, plugin objects and PVCs.

The job driver (jobs.py) applies the lifecycle's effects; those that make or remove a Job's
companions land here: `EnsurePodGroup` (the PodGroup built by the pure `core/jobpodgroup.py`,
created or patched), `EnsurePluginResources` and `DeletePluginResources` (the svc, ssh and other
plugins' ConfigMaps, Services and Secret, from `core/plugins`), and `EnsurePVCs`. Each is
idempotent: an object that exists is left as it is, or patched only where it differs.
"""

from __future__ import annotations

import asyncio
from typing import Any

from services.controller.cache import Cache
from services.controller.core import effects as fx
from services.controller.core.jobpodgroup import build_podgroup, podgroup_needs_update
from services.controller.core.plugins import plugin_object_names, plugin_objects, ssh
from services.controller.core.plugins.args import plugin_args
from services.controller.core.plugins.ssh import secret_conflict
from services.controller.core.plugins.sshkeys import generate_key_pair
from services.controller.core.pods import build_pvc
from services.controller.kube_writes import KubeWrites
from shared import failpoints
from shared.volcano.objects import JobObject, KubeObject, PodGroupObject

Json = dict[str, Any]


def podgroup_name(job: Json) -> str:
    """The name of a Job's PodGroup, as Volcano's job controller gives it."""
    view = JobObject(job)
    return f"{view.name}-{view.uid}"


class JobResources:
    def __init__(self, cache: Cache, kube: KubeWrites) -> None:
        self._cache = cache
        self._kube = kube
        self._podgroup_checked: dict[str, tuple[Any, ...]] = {}  # job uid -> what last agreed

    def forget(self, job_uid: str) -> None:
        """The job is gone: drop what was remembered of its PodGroup."""
        self._podgroup_checked.pop(job_uid, None)

    async def ensure_podgroup(self, job: Json) -> None:
        priorities = {KubeObject(p).name: int(p.get("value") or 0) for p in self._cache.all("PriorityClass")}
        view = JobObject(job)
        existing = self._cache.get("PodGroup", (view.namespace, podgroup_name(job)))
        # Every pod change of a job syncs it; its PodGroup only needs another look when the job,
        # the PodGroup or a priority changed since the last one agreed.
        checked = (
            view.meta.get("resourceVersion"),
            _version(existing),
            tuple(sorted(priorities.items())),
        )
        if existing is not None and self._podgroup_checked.get(view.uid) == checked:
            return
        desired = build_podgroup(job, priorities)
        if existing is None:
            await self._kube.create(desired)
            return
        self._podgroup_checked[view.uid] = checked
        patch = podgroup_needs_update(existing, desired)
        if patch:
            held = PodGroupObject(existing)
            await self._kube.patch("PodGroup", held.namespace, held.name, patch)

    async def ensure_plugins(self, job: Json, effect: fx.EnsurePluginResources) -> None:
        namespace = JobObject(job).namespace or "default"
        keyless = tuple(p for p in effect.plugins if p != ssh.NAME)
        for obj in plugin_objects(job, None, keyless):
            created = await self._kube.create(obj)
            if created is None and effect.refresh and obj["kind"] == "ConfigMap":
                await self._kube.patch(
                    "ConfigMap", namespace, KubeObject(obj).name, {"data": obj.get("data")}
                )
        if ssh.NAME in effect.plugins:
            for _, name in plugin_object_names(job, [ssh.NAME]):
                await self._ensure_ssh_secret(job, namespace, name)

    async def _ensure_ssh_secret(self, job: Json, namespace: str, name: str) -> None:
        """Create the ssh plugin's Secret unless it exists. A key pair is drawn only then, and off
        the event loop: a 2048-bit RSA key takes 0.4 to 1.3 s of CPU on a busy two-core machine."""
        existing = await self._kube.get("Secret", namespace, name)
        conflict = secret_conflict(existing, job)
        if conflict:
            await self._kube.record_event(job, type_="Warning", reason="PluginError", message=conflict)
            return
        if existing is not None:
            return
        keys = ssh.user_key_pair(plugin_args(job, ssh.NAME) or []) or await asyncio.to_thread(
            generate_key_pair
        )
        for obj in plugin_objects(job, keys, [ssh.NAME]):
            await self._kube.create(obj)
        await failpoints.hit("ctl.after_ssh_secret_create")

    async def delete_plugins(self, job: Json, effect: fx.DeletePluginResources) -> None:
        view = JobObject(job)
        namespace, uid = view.namespace or "default", view.uid
        for kind, name in plugin_object_names(job, effect.plugins):
            existing = await self._kube.get(kind, namespace, name)
            if existing is not None and any(
                o.get("uid") == uid for o in KubeObject(existing).owner_references
            ):
                await self._kube.delete(kind, namespace, name)

    async def ensure_pvcs(self, job: Json, effect: fx.EnsurePVCs) -> None:
        namespace = JobObject(job).namespace or "default"
        for index, volume in enumerate((job.get("spec") or {}).get("volumes") or []):
            claim = volume.get("volumeClaimName")
            if claim and volume.get("volumeClaim") is not None:
                await self._kube.create(build_pvc(job, index, claim))
            elif claim and await self._kube.get("PersistentVolumeClaim", namespace, claim) is None:
                await self._kube.record_event(
                    job,
                    type_="Warning",
                    reason="PVCError",
                    message=f"pvc {claim} is not found, "
                    "the job will be in the Pending state until the PVC is created",
                )


def _version(obj: Json | None) -> str | None:
    return None if obj is None else KubeObject(obj).meta.get("resourceVersion")
