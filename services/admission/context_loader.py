"""Shell: gather the `AdmissionContext` the pure rules need, from PostgreSQL and the API server.

Queues and priority classes come from the scheduler's projection of the cluster (read-only here),
cached for a moment so that a burst of reviews costs one query. A queue or priority class that a
request names but the projection does not hold yet (created a moment ago) is read from the API
server, so a Queue applied just before its first Job is not refused as missing.

Validating the CREATE of a Job or PodGroup, or the DELETE of a Queue, lists the queues from the
API server (one LIST): the cache is half a second old and the projection trails the API, so a
queue closed a moment ago would still look Open there, and a child queue created a moment ago
would not yet make its parent a non-leaf. The API server is the only place their state is exact.

Defaulting the CREATE of a PodGroup left on the default queue reads its Namespace (one GET) for
the `scheduling.volcano.sh/queue-name` annotation, as Volcano's PodGroup webhook does.

A Pod's review (rules/pods.py) reads nothing but the scheduler's name, so it reads no database;
and when the cached context expires under a burst, one read refreshes it for every review
waiting (each used to read the database itself: a fifth of admission's CPU in a small S1).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import aiohttp
from kubernetes_asyncio import client
from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.admission.rules.context import AdmissionContext, QueueAdmissionFacts
from shared.domain.resources import Resources
from shared.kube.client import ApiError, request
from shared.kube.kinds import KINDS
from shared.kube.names import dns1123_subdomain_errors
from shared.storage import tables
from shared.volcano import queue_access
from shared.volcano.keys import POD_QUEUE_NAME as NAMESPACE_QUEUE
from shared.volcano.objects import KubeObject

CACHE_SECONDS = 0.5
# A lookup answers in milliseconds; this bound keeps a stuck API server well inside the webhook's
# own timeout (10 s by default), so the API server gets our refusal rather than a timeout.
API_TIMEOUT_SECONDS = 3.0
# Writes that put something into a queue: its state must be exact when they are admitted.
QUEUE_ENTRIES = frozenset({"Job", "PodGroup"})


class ContextUnavailable(Exception):
    """The API server or the database could not be asked what a decision depends on; nothing
    may be admitted."""


class ContextLoader:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], api: client.ApiClient | None, *, scheduler_name: str
    ) -> None:
        self._sessions = sessions
        self._api = api
        self._scheduler_name = scheduler_name
        self._cached: AdmissionContext | None = None
        self._cached_at = 0.0
        self._reading: asyncio.Future[AdmissionContext] | None = None
        self._pods = AdmissionContext(scheduler_name=scheduler_name)

    async def load(self, review: dict[str, Any], webhook: str = "validate") -> AdmissionContext:
        """The context for one review; `ContextUnavailable` when the API server cannot answer."""
        if _kind_of(review) == "Pod":
            return self._pods
        ctx = await self._from_database()
        wanted_queues, wanted_classes = _named(review)
        tree = self._api is not None and webhook == "validate" and _reads_queue_tree(review)
        if tree:
            looked_up = []  # every queue is listed from the API server below
        elif webhook == "validate" and _enters_queue(review):
            looked_up = sorted(wanted_queues)  # exact state, whatever the projection says
        else:
            looked_up = [q for q in wanted_queues if q not in ctx.queues]
        missing_classes = [c for c in wanted_classes if not ctx.priority_class_exists(c)]
        if self._api is not None and (looked_up or missing_classes or tree):
            try:
                if tree:
                    ctx = await self._with_listed_queues(ctx)
                ctx = await self._with_api_lookups(ctx, looked_up, missing_classes)
            except (TimeoutError, ApiError, aiohttp.ClientError, OSError) as error:
                raise ContextUnavailable(f"the API server could not be asked: {error}") from error
        namespace = _defaulted_podgroup_namespace(review) if webhook == "mutate" else None
        if self._api is not None and namespace:
            ctx = replace(ctx, namespace_queues=await _namespace_queue(self._api, namespace))
        return ctx

    async def _from_database(self) -> AdmissionContext:
        """The cached context, or the one read under way, or a fresh read shared by every review
        that asks meanwhile (shielded: a review whose caller went away does not cancel it)."""
        if self._cached is not None and time.monotonic() - self._cached_at < CACHE_SECONDS:
            return self._cached
        if self._reading is None or self._reading.done():
            self._reading = asyncio.ensure_future(self._fresh_from_database())
        return await asyncio.shield(self._reading)

    async def _fresh_from_database(self) -> AdmissionContext:
        """A fresh read. A pooled connection that died with the server (a PostgreSQL restart:
        found by `phalanx chaos`) is thrown away and the read tried once more on a new one, so
        the first reviews after a restart are not refused for nothing; a database that still
        cannot answer refuses the review as unavailable rather than failing the call."""
        try:
            return await self._read_database()
        except DBAPIError as error:
            if not error.connection_invalidated:
                raise ContextUnavailable(f"the database could not be read: {error.orig}") from error
        except OSError as error:
            raise ContextUnavailable(f"the database could not be reached: {error}") from error
        try:
            return await self._read_database()
        except (DBAPIError, OSError) as error:
            raise ContextUnavailable(f"the database could not be read: {error}") from error

    async def _read_database(self) -> AdmissionContext:
        async with self._sessions() as session:
            queues = (
                (await session.execute(select(tables.Queue).where(tables.Queue.deleted.is_(False))))
                .scalars()
                .all()
            )
            classes = (
                (
                    await session.execute(
                        select(tables.PriorityClass.name).where(tables.PriorityClass.deleted.is_(False))
                    )
                )
                .scalars()
                .all()
            )
            per_queue = dict(
                (
                    await session.execute(
                        select(tables.PodGroup.queue, func.count())
                        .where(tables.PodGroup.deleted.is_(False), tables.PodGroup.phase != "Completed")
                        .group_by(tables.PodGroup.queue)
                    )
                ).all()
            )
        self._cached = AdmissionContext(
            queues={q.name: _view(q) for q in queues},
            priority_classes=frozenset(classes),
            jobs_per_queue={k: int(v) for k, v in per_queue.items()},
            scheduler_name=self._scheduler_name,
        )
        self._cached_at = time.monotonic()
        return self._cached

    async def _with_listed_queues(self, ctx: AdmissionContext) -> AdmissionContext:
        """Every queue as the API server has it: a new child queue counts at once."""
        assert self._api is not None
        path = KINDS["Queue"].collection()
        listed = await request(self._api, "GET", path, timeout=API_TIMEOUT_SECONDS)
        views = [QueueAdmissionFacts.from_queue(item) for item in (listed or {}).get("items") or ()]
        # The controller opens a new queue; until it has, the queue counts as Open.
        return replace(ctx, queues={v.name: replace(v, state=v.state or "Open") for v in views})

    async def _with_api_lookups(
        self, ctx: AdmissionContext, queues: Iterable[str], classes: Iterable[str]
    ) -> AdmissionContext:
        assert self._api is not None
        found = dict(ctx.queues)
        for name in queues:
            queue = await _get(self._api, "Queue", name)
            if queue is None:
                found.pop(name, None)  # deleted, though the projection may not know yet
            else:
                view = QueueAdmissionFacts.from_queue(queue)
                found[name] = replace(view, state=view.state or "Open")  # the controller opens new queues
        names = set(ctx.priority_classes)
        for name in classes:
            if await _get(self._api, "PriorityClass", name) is not None:
                names.add(name)
        return replace(ctx, queues=found, priority_classes=frozenset(names))


async def _get(api: client.ApiClient, kind: str, name: str) -> dict[str, Any] | None:
    try:
        return await request(api, "GET", KINDS[kind].item(None, name), timeout=API_TIMEOUT_SECONDS)
    except ApiError as error:
        if error.status == 404:
            return None
        raise


async def _namespace_queue(api: client.ApiClient, namespace: str) -> dict[str, str]:
    """{namespace: the queue its `scheduling.volcano.sh/queue-name` annotation names}, or {}.
    As in Volcano's PodGroup webhook, a namespace that cannot be read leaves the queue alone."""
    try:
        path = KINDS["Namespace"].item(None, namespace)
        found = await request(api, "GET", path, timeout=API_TIMEOUT_SECONDS)
    except (TimeoutError, ApiError, aiohttp.ClientError, OSError):
        return {}
    queue = KubeObject(found or {}).annotation(NAMESPACE_QUEUE)
    return {namespace: str(queue)} if queue else {}


def _defaulted_podgroup_namespace(review: dict[str, Any]) -> str | None:
    """The namespace of a PodGroup being created on the default queue: the one case where the
    mutating webhook reads its Namespace."""
    req = review.get("request")
    if not isinstance(req, dict) or req.get("operation") != "CREATE":
        return None
    if not isinstance(req.get("kind"), dict) or req["kind"].get("kind") != "PodGroup":
        return None
    obj = req.get("object")
    if not isinstance(obj, dict) or not isinstance(obj.get("spec") or {}, dict):
        return None
    if (obj.get("spec") or {}).get("queue") not in (None, "", "default"):
        return None
    namespace = req.get("namespace") or KubeObject(obj).namespace
    return str(namespace) if namespace else None


def _view(row: tables.Queue) -> QueueAdmissionFacts:
    def amounts(milli: dict[str, int] | None) -> dict[str, str]:
        return Resources(milli).to_quantities() if milli else {}

    return QueueAdmissionFacts(
        name=row.name,
        state=row.state or "Open",
        parent=row.parent or "",
        capability=amounts(row.capability),
        deserved=amounts(row.deserved),
        guarantee=amounts(row.guarantee),
        allowed_namespaces=queue_access.allowed_namespaces(row.annotations),
    )


def _reads_queue_tree(review: dict[str, Any]) -> bool:
    """Reviews whose rules read a queue's children (a job only enters a leaf queue; a queue with
    children is not deleted): they list the queues from the API server, as the projection may
    not have a child created a moment ago."""
    req = review.get("request")
    if not isinstance(req, dict) or not isinstance(req.get("kind"), dict):
        return False
    kind, operation = req["kind"].get("kind"), req.get("operation")
    return (operation == "CREATE" and kind in QUEUE_ENTRIES) or (operation == "DELETE" and kind == "Queue")


def _enters_queue(review: dict[str, Any]) -> bool:
    req = review.get("request")
    if not isinstance(req, dict) or not isinstance(req.get("kind"), dict):
        return False
    return req.get("operation") == "CREATE" and req["kind"].get("kind") in QUEUE_ENTRIES


def _kind_of(review: dict[str, Any]) -> str | None:
    req = review.get("request")
    kind = req.get("kind") if isinstance(req, dict) else None
    return kind.get("kind") if isinstance(kind, dict) else None


def _named(review: dict[str, Any]) -> tuple[set[str], set[str]]:
    """The queues and priority classes the reviewed object refers to. A name of the wrong type
    (a list for a queue name, ...) is not looked up: the review refuses the object for its
    schema unread, so this does not check the schema a second time."""
    req = review.get("request")
    obj = req.get("object") if isinstance(req, dict) else None
    kind = _kind_of(review)
    if kind not in ("Job", "PodGroup", "Queue") or not isinstance(obj, dict):
        return set(), set()
    spec = _mapping(obj.get("spec"))
    queues: set[str] = set()
    classes: set[str] = set()
    if kind == "Queue":
        queues |= _names(spec.get("parent"))
        return queues, classes
    queues |= _names(spec.get("queue") or "default")
    classes |= _names(spec.get("priorityClassName"))
    tasks = spec.get("tasks")
    for task in tasks if isinstance(tasks, list) else []:
        template = _mapping(_mapping(task).get("template"))
        classes |= _names(_mapping(template.get("spec")).get("priorityClassName"))
    return queues, classes


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _names(value: Any) -> set[str]:
    """A name that may be looked up (a DNS subdomain, as every queue and priority class name is:
    never a path of the API's), else none."""
    if isinstance(value, str) and not dns1123_subdomain_errors(value):
        return {value}
    return set()
