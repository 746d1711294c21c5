"""Shell: project `cluster.*` events into the scheduler's tables, a fetched batch per transaction.

Idempotent and monotonic: a row is only overwritten by an event of the same or a newer
resourceVersion, so a replayed or reordered event never moves state backwards; deletions leave a
tombstone so that a late "added" cannot resurrect the object. The same transaction confirms the
cycle's pending decisions that the cluster now shows carried out (a pod bound, an evicted pod gone,
a PodGroup out of Pending), which releases them from the snapshot's overlay. A `KindResynced`
marker tombstones what the watcher's relist no longer saw, unless a newer relist's marker was
applied before it (`resync_markers`).

Every row written gets a new `change_seq`, and ingest transactions take one advisory lock first,
so they commit in the order of their numbers even with several replicas ingesting: a reader that
has seen number N has seen every row numbered below it, and the cycle reads only what is past it
(mirror.py).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.scheduler.device_rows import DEVICE_KINDS
from services.scheduler.projection import project
from services.scheduler.row_tables import TABLE_OF_KIND, Row, table_row
from services.scheduler.storage_rows import STORAGE_KINDS
from shared import failpoints
from shared.messages.cluster import KindResynced, ObjectChanged
from shared.messages.envelope import CloudEvent
from shared.storage import tables

INGESTED_KINDS = (
    "Node",
    "Queue",
    "PriorityClass",
    "PodGroup",
    "Pod",
    "ConfigMap",
    "PodDisruptionBudget",
    *STORAGE_KINDS,
    *DEVICE_KINDS,
    "HyperNode",
)
# Any fixed number: the advisory lock that puts ingest transactions in the order of their numbers.
INGEST_LOCK = 0x5048_414C_0015


class Ingester:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        scheduler_names: Collection[str],
        on_new_work: Callable[[], None] = lambda: None,
    ) -> None:
        self._sessions = sessions
        self._ours = frozenset(scheduler_names)
        self._on_new_work = on_new_work
        self.ingested = 0

    async def handle(self, events: list[CloudEvent[Any]]) -> None:
        latest: dict[tuple[type[tables.Base], str], Row] = {}
        resyncs: list[KindResynced] = []
        for event in events:
            data = event.data
            if isinstance(data, KindResynced):
                resyncs.append(data)
                continue
            if not isinstance(data, ObjectChanged):
                continue
            projected = project(data, self._ours)
            if projected is None:
                continue
            row = table_row(projected)
            key = (row.table, row.key)
            # One row per object per batch: the newest version wins (a relist ties and wins,
            # so its relist id is recorded).
            held = latest.get(key)
            if held is None or held.values["resource_version"] <= row.values["resource_version"]:
                latest[key] = row
        if not latest and not resyncs:
            self.ingested += len(events)
            return
        async with self._sessions() as session, session.begin():
            await session.execute(select(func.pg_advisory_xact_lock(INGEST_LOCK)))
            by_table: dict[type[tables.Base], list[dict[str, Any]]] = {}
            for (table, _), row in latest.items():
                by_table.setdefault(table, []).append(row.values)
            for table, rows in by_table.items():
                await _upsert(session, table, rows)
            await _confirm_decisions(session, list(latest.values()))
            for marker in resyncs:
                await _tombstone_unlisted(session, marker)
        self.ingested += len(events)
        await failpoints.hit("sched.after_ingest_batch")  # a lagging ingest, for fault tests
        if any(_is_new_work(row) for row in latest.values()):
            self._on_new_work()


async def _upsert(session: AsyncSession, table: type[tables.Base], rows: list[dict[str, Any]]) -> None:
    core_table: Any = table.__table__
    key = [c.name for c in core_table.primary_key.columns]
    columns = sorted({c for row in rows for c in row})
    statement = insert(core_table)
    excluded = statement.excluded
    statement = statement.on_conflict_do_update(
        index_elements=key,
        set_={**{c: excluded[c] for c in columns if c not in key}, "change_seq": _next_change()},
        where=core_table.c.resource_version <= excluded.resource_version,
    )
    # A Core statement with a list of parameter sets: SQLAlchemy compiles it once (and caches it)
    # and sends the rows as multi-row VALUES batches, where building a literal multi-row statement
    # per batch cost more CPU than the database's work.
    await session.execute(statement, [{c: row.get(c) for c in columns} for row in rows])


async def _confirm_decisions(session: AsyncSession, rows: list[Row]) -> None:
    bound = [r.key for r in rows if r.table is tables.Pod and r.values.get("node_name")]
    gone = [r.key for r in rows if r.table is tables.Pod and r.values["deleted"]]
    admitted = [
        r.key
        for r in rows
        if r.table is tables.PodGroup and (r.values["phase"] != "Pending" or r.values["deleted"])
    ]
    decisions = tables.Decision
    conditions = []
    if bound:
        conditions.append(and_(decisions.kind == "bind", decisions.pod_uid.in_(bound)))
    if gone:
        conditions.append(decisions.pod_uid.in_(gone))
    if admitted:
        conditions.append(and_(decisions.kind == "enqueue", decisions.gang_uid.in_(admitted)))
    if conditions:
        await session.execute(
            update(decisions).where(decisions.state == "pending", or_(*conditions)).values(state="confirmed")
        )


async def _tombstone_unlisted(session: AsyncSession, marker: KindResynced) -> None:
    table = TABLE_OF_KIND.get(marker.kind)
    if table is None:
        return
    # Only a marker newer than every one applied before counts: an older one, redelivered after a
    # newer relist, would tombstone the rows that relist wrote (they carry its relist id). A
    # relist at the same resourceVersion saw no deletion, so it has nothing to tombstone either.
    record = insert(tables.ResyncMarker).values(
        kind=marker.kind, relist_id=marker.relist_id, resource_version=marker.resource_version
    )
    record = record.on_conflict_do_update(
        index_elements=["kind"],
        set_={"relist_id": record.excluded.relist_id, "resource_version": record.excluded.resource_version},
        where=tables.ResyncMarker.resource_version < record.excluded.resource_version,
    )
    if (await session.execute(record.returning(tables.ResyncMarker.kind))).first() is None:
        return
    columns: Any = table.__table__.c
    # storage_objects and device_objects hold three kinds each: a relist of one tombstones only its own.
    same_kind = [columns.kind == marker.kind] if "kind" in columns else []
    await session.execute(
        update(table)
        .where(
            *same_kind,
            columns.deleted.is_(False),
            columns.relist_id.is_distinct_from(marker.relist_id),
            columns.resource_version <= marker.resource_version,
        )
        .values(deleted=True, change_seq=_next_change())
    )


def _next_change() -> Any:
    return func.nextval(tables.CHANGE_SEQUENCE)


def _is_new_work(row: Row) -> bool:
    if row.table is tables.Pod:
        return not row.values.get("node_name") or row.values["deleted"]
    # A budget that allows more disruptions may let a waiting preemption go ahead, and a claim or
    # volume changing may let a pod waiting on its volumes go.
    return row.table in (
        tables.PodGroup,
        tables.Node,
        tables.Queue,
        tables.SchedulerConfig,
        tables.DisruptionBudget,
        tables.StorageObject,
        tables.DeviceObject,
        tables.HyperNode,  # a new domain may hold a gang waiting for one
    )
