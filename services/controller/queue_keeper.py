"""Shell: queue states and bus Commands, each Command carried out exactly once.

A Queue's `status.state` follows Volcano's queue controller (`queue_transition`): Open, Closing
while PodGroups remain, Closed; a queue without a parent is put under `root`. A Command is
claimed in `applied_commands` (its uid is the key) before anything is done, then deleted, then
handed to its job's lifecycle or to its queue: a redelivered or re-listed Command finds its claim
and is only deleted.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.controller.cache import Cache
from services.controller.coalesce import Coalescer
from services.controller.core.commands import decide_command
from services.controller.core.queues import QueueLifecycleState, queue_status_patch, queue_transition
from services.controller.kube_writes import KubeWrites
from shared.volcano import keys
from shared.volcano.enums import Action
from shared.volcano.objects import JobObject, KubeObject, QueueObject

log = structlog.get_logger()
Json = dict[str, Any]
# PodGroups come and go in bursts (a thousand single pods, each with its own); a queue's status,
# which counts them all, is synced once per burst.
QUEUE_SYNC_COALESCE_SECONDS = 0.1
# Volcano's built-in queues, created at start when absent: `root` heads the hierarchy (every queue
# without a parent is put under it) and is never reclaimed from; `default` takes jobs naming no queue.
BUILTIN_QUEUES: tuple[Json, ...] = (
    {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "root"},
        "spec": {"weight": 1, "reclaimable": False},
    },
    {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "default"},
        "spec": {"weight": 1, "reclaimable": True},
    },
)


class QueueKeeper:
    def __init__(
        self,
        cache: Cache,
        kube: KubeWrites,
        sessions: async_sessionmaker[AsyncSession],
        *,
        job_command: Callable[[str, str], Awaitable[None]],
    ) -> None:
        self._cache = cache
        self._kube = kube
        self._sessions = sessions
        self._job_command = job_command
        self._syncs = Coalescer(QUEUE_SYNC_COALESCE_SECONDS, self._sync, what="queue sync")

    async def ensure_builtin_queues(self) -> None:
        for queue in BUILTIN_QUEUES:
            if self._cache.get("Queue", ("", QueueObject(queue).name)) is None:
                await self._kube.create(copy.deepcopy(queue))

    async def queue_changed(self, queue: Json) -> None:
        await self._apply(queue, Action.SYNC_QUEUE)

    def podgroups_changed(self, name: str) -> None:
        """A PodGroup of the queue came or went: sync the queue shortly, once for the whole burst.
        If the controller stops first, the periodic resync brings the queue up to date."""
        self._syncs.request(name)

    async def _sync(self, name: str) -> None:
        queue = self._cache.get("Queue", ("", name))
        if queue is not None:
            await self.queue_changed(queue)

    async def _apply(self, queue: Json, action: str, parent_state: str | None = None) -> None:
        """`parent_state`: the parent's new state when the parent's own transition asks for this
        one (the cache may not show the parent's status write yet)."""
        queue_object = QueueObject(queue)
        name, parent_name = queue_object.name, queue_object.parent
        parent = self._cache.get("Queue", ("", parent_name)) if parent_name else None
        if parent_state is None and parent is not None:
            parent_state = QueueObject(parent).state or None
        groups = sum(
            1
            for pg in self._cache.all("PodGroup")
            if ((pg.get("spec") or {}).get("queue") or "default") == name
        )
        view = QueueLifecycleState.from_manifest(queue, groups)
        children = tuple(
            QueueLifecycleState.from_manifest(q, 0)
            for q in self._cache.all("Queue")
            if (q.get("spec") or {}).get("parent") == name
        )
        result = queue_transition(
            view,
            action,
            parent_state=parent_state,
            children=children,
        )
        for event in result.events:
            await self._kube.record_event(queue, type_=event.type, reason=event.reason, message=event.message)
        if result.set_parent:
            await self._kube.patch("Queue", None, name, {"spec": {"parent": result.set_parent}})
        if result.closed_by_parent is not None and view.closed_by_parent != result.closed_by_parent:
            # The mark that lets the parent's reopening reopen this queue, as Volcano writes it.
            marked = {keys.CLOSED_BY_PARENT: "true" if result.closed_by_parent else "false"}
            await self._kube.patch("Queue", None, name, {"metadata": {"annotations": marked}})
        if result.changed or not (queue.get("status") or {}).get("state"):
            await self._kube.patch("Queue", None, name, queue_status_patch(result), subresource="status")
        for child in result.close_children:
            held = self._cache.get("Queue", ("", child))
            if held is not None:
                await self._apply(held, Action.CLOSE_QUEUE, parent_state=result.state)
        for child in result.open_children:
            held = self._cache.get("Queue", ("", child))
            if held is not None:
                await self._apply(held, Action.OPEN_QUEUE, parent_state=result.state)

    async def command_added(self, command: Json) -> None:
        view = KubeObject(command)
        first_time = await self._claim(command)
        await self._kube.delete("Command", view.namespace, view.name)
        if not first_time:
            return
        decision = decide_command(command)
        if decision.kind == "job":
            job = self._cache.get("Job", (decision.namespace, decision.name))
            if job is not None:
                await self._job_command(JobObject(job).uid, decision.action)
        elif decision.kind == "queue":
            queue = self._cache.get("Queue", ("", decision.name))
            if queue is not None:
                await self._apply(queue, decision.action)
        else:
            log.warning("command ignored", command=view.name, reason=decision.reason)

    async def _claim(self, command: Json) -> bool:
        view = KubeObject(command)
        target = command.get("target") or {}
        async with self._sessions() as session, session.begin():
            claimed = (
                await session.execute(
                    text(
                        "INSERT INTO applied_commands (uid, namespace, name, action, target) "
                        "VALUES (:uid, :namespace, :name, :action, :target) "
                        "ON CONFLICT (uid) DO NOTHING RETURNING uid"
                    ),
                    {
                        "uid": view.uid,
                        "namespace": view.namespace,
                        "name": view.name,
                        "action": str(command.get("action") or ""),
                        "target": f"{target.get('kind')}/{target.get('name')}",
                    },
                )
            ).first()
        return claimed is not None
