"""Shell: the cluster's rows as the cycle last read them, kept in memory between cycles.

The snapshot reader (snapshot_reader.py) asks the mirror to catch up at the start of each cycle,
inside the cycle's REPEATABLE READ transaction. The first read, and the first after the mirror is
reset (this process gained leadership, or a cycle failed), reads every live row; every later read
asks each table only for the rows whose `change_seq` is past the highest the mirror has seen.
Ingest draws those numbers in commit order (ingest.py), so nothing committed is ever skipped, and
a cycle reads in proportion to what changed, not to the size of the cluster.

A row that is no longer live (a tombstone, a PodGroup Completed, a pod Failed or gone) leaves the
mirror. The verdicts the cycle recorded are kept here too: the cycle loop is their one writer, so
it reads them once and updates them after each commit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, literal, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from services.scheduler.projection import RELEASING_PHASE
from shared.storage import tables

Verdict = tuple[str, str, str]  # recorded (reason, message, queue)
_LIVE_POD_PHASES = frozenset({"Pending", "Running", "Succeeded", RELEASING_PHASE})


def _not_deleted(row: Any) -> bool:
    return not row.deleted


def _live_group(row: Any) -> bool:
    return not row.deleted and row.phase != "Completed"


def _live_pod(row: Any) -> bool:
    return not row.deleted and row.phase in _LIVE_POD_PHASES


@dataclass(frozen=True)
class _Mirrored:
    attribute: str  # the ClusterMirror field holding the rows by key
    table: Any
    key: str
    live: Callable[[Any], bool]


_MIRRORED = (
    _Mirrored("queues", tables.Queue.__table__, "name", _not_deleted),
    _Mirrored("priority_classes", tables.PriorityClass.__table__, "name", _not_deleted),
    _Mirrored("groups", tables.PodGroup.__table__, "uid", _live_group),
    _Mirrored("pods", tables.Pod.__table__, "uid", _live_pod),
    _Mirrored("nodes", tables.Node.__table__, "name", _not_deleted),
    _Mirrored("configs", tables.SchedulerConfig.__table__, "name", _not_deleted),
    _Mirrored("budgets", tables.DisruptionBudget.__table__, "uid", _not_deleted),
    _Mirrored("storage", tables.StorageObject.__table__, "key", _not_deleted),
    _Mirrored("devices", tables.DeviceObject.__table__, "key", _not_deleted),
    _Mirrored("hyper_nodes", tables.HyperNode.__table__, "name", _not_deleted),
)


@dataclass
class ClusterMirror:
    """Live rows by key, as of `seq`; -1 means nothing is held and the next read is a full one."""

    seq: int = -1
    queues: dict[str, Any] = field(default_factory=dict)
    priority_classes: dict[str, Any] = field(default_factory=dict)
    groups: dict[str, Any] = field(default_factory=dict)
    pods: dict[str, Any] = field(default_factory=dict)
    nodes: dict[str, Any] = field(default_factory=dict)
    configs: dict[str, Any] = field(default_factory=dict)
    budgets: dict[str, Any] = field(default_factory=dict)
    storage: dict[str, Any] = field(default_factory=dict)  # claims, volumes, classes by key
    devices: dict[str, Any] = field(default_factory=dict)  # DRA classes, claims, slices by key
    hyper_nodes: dict[str, Any] = field(default_factory=dict)  # HyperNodes by name
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    changed_rows: int = 0  # rows the last catch-up read (for the cycle's metrics and logs)
    # What the last catch-up read: the keys it changed per attribute, and whether it read all
    # (then every row is new to whoever builds on the mirror: snapshot_cache.py).
    changed: dict[str, set[str]] = field(default_factory=dict)
    full_read: bool = True

    @property
    def conf_text(self) -> str | None:
        row = next(iter(self.configs.values()), None)
        return None if row is None else str(row.conf)

    def reset(self) -> None:
        """Forget everything: the next catch-up reads every live row again."""
        fresh = ClusterMirror()
        self.__dict__.update(fresh.__dict__)

    async def catch_up(self, session: AsyncSession) -> None:
        """Bring the rows up to date within `session`'s transaction (one consistent snapshot)."""
        full = self.seq < 0
        if full:
            self.reset()
        top, changed = self.seq, 0
        self.changed, self.full_read = {}, full
        moved = _MIRRORED if full else await self._moved(session)
        for mirrored in _MIRRORED:
            held: dict[str, Any] = getattr(self, mirrored.attribute)
            keys = self.changed[mirrored.attribute] = set()
            if mirrored not in moved:
                continue
            statement = select(mirrored.table)
            if not full:
                statement = statement.where(mirrored.table.c.change_seq > self.seq)
            for row in (await session.execute(statement)).all():
                changed += 1
                top = max(top, row.change_seq)
                key = getattr(row, mirrored.key)
                keys.add(key)
                if mirrored.live(row):
                    held[key] = row
                else:
                    held.pop(key, None)
        if full:
            verdict = tables.GangVerdictRow
            statement = select(verdict.gang_uid, verdict.reason, verdict.message, verdict.queue)
            rows = (await session.execute(statement)).all()
            self.verdicts = {uid: (reason, message, queue) for uid, reason, message, queue in rows}
            top = max(top, 0)
        self.seq, self.changed_rows = top, changed

    async def _moved(self, session: AsyncSession) -> tuple[_Mirrored, ...]:
        """The tables with a row past `seq`, asked in one round trip (each table's highest number
        is one step down its change_seq index): most cycles see only pods and PodGroups change,
        and a quiet one nothing, where asking each table cost a round trip each."""
        highest = union_all(
            *(
                select(literal(index).label("table"), func.max(m.table.c.change_seq).label("top"))
                for index, m in enumerate(_MIRRORED)
            )
        )
        rows = (await session.execute(highest)).all()
        return tuple(_MIRRORED[index] for index, top in rows if top is not None and top > self.seq)

    def recorded(self, written: Mapping[str, Verdict], cleared: list[str]) -> None:
        """The verdicts a committed cycle wrote, and the gangs whose verdict it deleted."""
        for uid in cleared:
            self.verdicts.pop(uid, None)
        self.verdicts.update(written)
