"""Shell: the controller's writes to Kubernetes, each idempotent.

Create treats AlreadyExists as done, delete treats NotFound as done, binding treats "already bound
to that node" as done; binds and evictions name the pod's uid as a precondition, so they never
touch a newer pod of the same name. A status write is a merge patch of the status subresource.
Binds have connections of their own (`binds`, a second client in app.py): a scheduler decision
must be carried out within its window, and on a busy controller the shared connections queue
behind pod creates and their admission webhooks for seconds. Events are queued and written on a
client of their own too (`events`; event_recorder.py), behind everything else. Every response that returns an
object is handed to `on_written` so the cache sees the
controller's own writes before the watch delivers them. Every write first asks `guard`, which a
sharded replica sets to refuse writes for a job whose shard it no longer holds (shard_leases.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog
from kubernetes_asyncio import client

from services.controller.cache import version_of
from services.controller.event_recorder import EventRecorder
from shared.kube.client import ApiError, request
from shared.kube.kinds import KINDS
from shared.volcano.objects import KubeObject

log = structlog.get_logger()
Json = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class EvictionRefused(Exception):
    """429 from pods/eviction: a PodDisruptionBudget does not allow the disruption now."""


def _always_allowed() -> None:
    return None


def _refusal(error: ApiError) -> str:
    causes = (error.body.get("details") or {}).get("causes") or []
    told = "; ".join(str(c.get("message")) for c in causes if c.get("message"))
    message = str(error.body.get("message") or error)
    return f"{message} {told}".strip()


class KubeWrites:
    def __init__(
        self,
        api: client.ApiClient,
        on_written: Callable[[Json], None],
        *,
        binds: client.ApiClient | None = None,
        events: client.ApiClient | None = None,
    ) -> None:
        self._api = api
        self._binds = binds or api
        self._on_written = on_written
        self.events = EventRecorder(events or api)
        self.guard: Callable[[], None] = _always_allowed

    async def create(self, obj: Json) -> Json | None:
        """Create `obj`; None when it already existed."""
        self.guard()
        kind = KINDS[obj["kind"]]
        namespace = KubeObject(obj).namespace
        try:
            created = await request(self._api, "POST", kind.collection(namespace), body=obj)
        except ApiError as error:
            if error.status == 409 and error.reason == "AlreadyExists":
                return None
            raise
        self._on_written(created)
        return created

    async def delete(self, kind_name: str, namespace: str | None, name: str, **options: Any) -> bool:
        self.guard()
        kind = KINDS[kind_name]
        body = {"apiVersion": "v1", "kind": "DeleteOptions", **options} if options else None
        try:
            await request(self._api, "DELETE", kind.item(namespace, name), body=body)
        except ApiError as error:
            if error.status == 404:
                return False
            raise
        return True

    async def patch(
        self, kind_name: str, namespace: str | None, name: str, patch: Json, *, subresource: str = ""
    ) -> Json | None:
        kind = KINDS[kind_name]
        self.guard()
        try:
            patched = await request(
                self._api,
                "PATCH",
                kind.item(namespace, name, subresource),
                body=patch,
                content_type=MERGE_PATCH,
            )
        except ApiError as error:
            if error.status == 404:
                return None
            raise
        self._on_written(patched)
        return patched

    async def set_status(
        self, kind_name: str, namespace: str | None, name: str, status: Json, *, subresource: str = "status"
    ) -> Json | None:
        """Replace the whole status, as Volcano's UpdateStatus does.

        A merge patch would keep any field the new status leaves out (a `running` counter of a job
        that has since completed), so this is a JSON Patch that replaces `/status` as one value.
        """
        kind = KINDS[kind_name]
        self.guard()
        try:
            written = await request(
                self._api,
                "PATCH",
                kind.item(namespace, name, subresource),
                body=[{"op": "add", "path": "/status", "value": status}],
                content_type=JSON_PATCH,
            )
        except ApiError as error:
            if error.status == 404:
                return None
            raise
        self._on_written(written)
        return written

    async def replace(self, obj: Json) -> Json:
        kind = KINDS[obj["kind"]]
        self.guard()
        view = KubeObject(obj)
        replaced = await request(self._api, "PUT", kind.item(view.namespace, view.name), body=obj)
        self._on_written(replaced)
        return replaced

    async def bind(self, namespace: str, name: str, node: str, uid: str) -> str:
        """Bind the pod of this uid; "bound", "already" (bound there before), "elsewhere" or "gone".

        The Binding names the pod's uid, a precondition the API server checks: a decision made
        for a pod that was since replaced by one of the same name (a restarted job reuses names)
        finds it "gone" rather than binding the newcomer.
        """
        self.guard()
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            await request(self._binds, "POST", KINDS["Pod"].item(namespace, name, "binding"), body=binding)
        except ApiError as error:
            if error.status == 404:
                return "gone"
            if error.status != 409:
                raise
            pod = await self.get("Pod", namespace, name)
            if pod is None or KubeObject(pod).uid != uid:
                return "gone"
            return "already" if (pod.get("spec") or {}).get("nodeName") == node else "elsewhere"
        return "bound"

    async def evict(self, namespace: str, name: str, uid: str) -> bool:
        """Evict the pod of this uid; False when it is gone or was replaced by a newer namesake.
        EvictionRefused (429) when its disruption budget forbids it for now."""
        self.guard()
        eviction = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": {"preconditions": {"uid": uid}},
        }
        try:
            await request(self._api, "POST", KINDS["Pod"].item(namespace, name, "eviction"), body=eviction)
        except ApiError as error:
            if error.status in (404, 409):
                return False
            if error.status == 429:
                raise EvictionRefused(_refusal(error)) from None
            raise
        return True

    async def get(self, kind_name: str, namespace: str | None, name: str) -> Json | None:
        try:
            return await request(self._api, "GET", KINDS[kind_name].item(namespace, name))
        except ApiError as error:
            if error.status == 404:
                return None
            raise

    async def list(self, kind_name: str) -> tuple[list[Json], int]:
        """Every object of the kind, and the list's resourceVersion (what it is the truth as of)."""
        kind = KINDS[kind_name]
        listed = await request(self._api, "GET", kind.collection())
        items: list[Json] = listed.get("items") or []
        for item in items:
            item.setdefault("kind", kind_name)
            item.setdefault("apiVersion", kind.api_version)
        return items, version_of(listed)

    async def record_event(
        self,
        involved: Json,
        *,
        type_: str,
        reason: str,
        message: str,
        component: str = "vc-controller-manager",
    ) -> None:
        """A Kubernetes Event on `involved`, as `kubectl describe` shows it: repeats of the same
        event count up on one Event, and a flood is cut off (event_recorder.py)."""
        await self.events.record(involved, type_=type_, reason=reason, message=message, component=component)
