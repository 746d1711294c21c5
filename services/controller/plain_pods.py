"""Shell: PodGroups for pods that no Volcano Job owns — Volcano's pg-controller.

Sits beside the gang keeper (gangs.py), which hands it the dispatcher's pod and workload events.
A plain pod that asks for one of our scheduler names gets a PodGroup of its own (or its
ReplicaSet's or StatefulSet's, sized by the workload's `group-min-member`), and is annotated with
its name; a workload scaled to zero loses that PodGroup, and a changed annotation resizes it.
What the PodGroup should be is decided by the pure `core/podgroups.py`; this module reads the
cache (or the API, for an owner whose event has not arrived yet) and writes the result.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from services.controller.cache import Cache
from services.controller.core.owners import controller_of
from services.controller.core.podgroups import (
    PODGROUP_PREFIX,
    WORKLOAD_KINDS,
    group_annotation_patch,
    needs_podgroup,
    podgroup_for_pod,
    workload_podgroup,
)
from services.controller.kube_writes import KubeWrites
from shared.volcano.keys import GROUP_NAME as GROUP_ANNOTATION
from shared.volcano.objects import KubeObject, PodGroupObject, PodObject

Json = dict[str, Any]


class PlainPodGroups:
    def __init__(self, cache: Cache, kube: KubeWrites, *, scheduler_names: Collection[str]) -> None:
        self._cache = cache
        self._kube = kube
        self._ours = tuple(scheduler_names)

    async def pod_added(self, pod: Json) -> None:
        """Give a plain pod that asks for our scheduler a PodGroup, as Volcano's pg-controller does."""
        if not needs_podgroup(pod, self._ours):
            return
        podgroup = podgroup_for_pod(pod, await self._owner_annotations(pod), self._ours)
        if podgroup is None:
            return
        await self._kube.create(podgroup)
        view = PodObject(pod)
        await self._kube.patch(
            "Pod", view.namespace, view.name, group_annotation_patch(PodGroupObject(podgroup).name)
        )

    async def _owner_annotations(self, pod: Json) -> dict[str, str]:
        """The annotations of the pod's ReplicaSet or StatefulSet (group-min-member and the
        `volcano.sh/` ones), from the cache or, when its event has not arrived yet, the API."""
        owner = controller_of(pod)
        kind = str((owner or {}).get("kind", ""))
        if owner is None or kind not in WORKLOAD_KINDS:
            return {}
        namespace = PodObject(pod).namespace
        workload = self._cache.by_uid(kind, str(owner.get("uid"))) or await self._kube.get(
            kind, namespace, str(owner.get("name"))
        )
        return dict(KubeObject(workload or {}).annotations)

    async def workload_changed(self, workload: Json) -> None:
        """Volcano's workload support: a ReplicaSet or StatefulSet scaled to zero loses its pods'
        PodGroup; a changed group-min-member (or inherited annotation) resizes it."""
        view = KubeObject(workload)
        namespace, uid = str(view.namespace), str(view.uid)
        name = f"{PODGROUP_PREFIX}{uid}"
        existing = self._cache.get("PodGroup", (namespace, name))
        first = next(
            (
                p
                for p in self._cache.all("Pod")
                if (pod := PodObject(p)).controller_uid == uid and pod.namespace == namespace
            ),
            None,
        )
        if first is not None:  # its group annotation is ours: judge it as when it was created
            held = PodObject(first)
            annotations = {k: v for k, v in held.annotations.items() if k != GROUP_ANNOTATION}
            first = {**first, "metadata": {**held.meta, "annotations": annotations}}
        action, podgroup = workload_podgroup(workload, first, existing, self._ours)
        if action == "delete" and existing is not None:
            await self._kube.delete("PodGroup", namespace, name)
        elif action == "update" and podgroup is not None:
            await self._kube.replace(podgroup)
