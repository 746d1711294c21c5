"""Shell: read one consistent snapshot from PostgreSQL into the core's dataclasses.

One REPEATABLE READ, READ ONLY transaction brings the in-memory mirror of the cluster's rows up
to date (only the rows ingest changed since the last cycle, mirror.py) and reads the pending
decisions, so the picture is consistent even while the ingester writes. Pending decisions that
still count (decision_expiry.py: younger than their time-to-live, or longer when their gang's
decision has begun) are overlaid: a bind decision makes its pod Bound on its node, an
eviction makes it Releasing, an enqueue makes its gang Inqueue. So what a previous cycle decided
counts as allocated until the cluster confirms it, or until the cycle loop expires it (when
ingest has caught up past its time-to-live, and the controller no longer carries it out), and
nothing is booked twice.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar, cast

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from services.scheduler import snapshot_parts as parts
from services.scheduler.core import snapshot as core
from services.scheduler.core.settled import settled_of
from services.scheduler.decision_expiry import DecisionExpiry, still_counts
from services.scheduler.device_snapshot import DeviceSnapshot
from services.scheduler.mirror import ClusterMirror
from services.scheduler.snapshot_cache import SnapshotCache
from shared.domain.resources import Resources
from shared.storage import tables

DEFAULT_QUEUE = parts.DEFAULT_QUEUE
T = TypeVar("T")


@dataclass
class ShellMemory:
    """What the shell carries between cycles for the core (lost on failover, rebuilt in a cycle)."""

    nominations: dict[str, str] = field(default_factory=dict)  # task uid -> node
    below_min_since: dict[str, datetime] = field(default_factory=dict)  # gang uid -> since
    # Core objects built from rows, by (table, key) with the row's resourceVersion: most rows are
    # unchanged from one cycle to the next, and rebuilding every node and pod was most of a
    # cycle's cost in a large cluster.
    built: dict[tuple[str, str], tuple[int, Any]] = field(default_factory=dict)
    # The rows themselves, brought up to date from what ingest changed since the last cycle.
    mirror: ClusterMirror = field(default_factory=ClusterMirror)
    # The snapshot built from them, rebuilt per gang from what changed (snapshot_cache.py).
    cache: SnapshotCache = field(default_factory=SnapshotCache)

    # One Resources object per distinct request: the core converts each request object once per
    # cycle (by identity), and the pods of a job all ask for the same.
    requests: dict[tuple[tuple[str, Any], ...], Resources] = field(default_factory=dict)

    def request(self, amounts: Mapping[str, Any]) -> Resources:
        key = tuple(sorted(amounts.items()))
        held = self.requests.get(key)
        if held is None:
            if len(self.requests) > 10_000:
                self.requests.clear()
            held = self.requests[key] = Resources(amounts)
        return held

    def holds(self, table: str, key: str, version: int) -> bool:
        held = self.built.get((table, key))
        return held is not None and held[0] == version

    def reuse(self, table: str, key: str, version: int, make: Callable[[], T]) -> T:
        held = self.built.get((table, key))
        if held is not None and held[0] == version:
            return cast(T, held[1])
        made = make()
        self.built[(table, key)] = (version, made)
        return made

    def forget_unseen(self, seen: int) -> None:
        """Drop what no longer exists, once stale entries outnumber the live ones."""
        if len(self.built) > 2 * seen + 1000:
            self.built.clear()


@dataclass(frozen=True)
class ReadResult:
    snapshot: core.Snapshot
    conf_text: str | None
    verdicts: Mapping[str, tuple[str, str, str]]  # gang uid -> recorded (reason, message, queue)
    # Nothing changed since the last read: no row, no pending decision, nomination nor
    # below-minimum mark (the cycle loop may then skip planning, cycle_loop.py).
    quiet: bool = False


async def read_snapshot(
    session: AsyncSession, *, now: datetime, expire_before: DecisionExpiry | None, memory: ShellMemory
) -> ReadResult:
    """`expire_before`: which pending decisions no longer count (None: all count); the cycle's
    commit expires exactly those (decision_expiry.py).

    The cluster's rows come from the memory's mirror, which reads only what changed since the
    last cycle (mirror.py); pending decisions are read whole each cycle, as they are few."""
    await session.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"))
    mirror = memory.mirror
    await mirror.catch_up(session)
    decision = tables.Decision
    counted = select(
        decision.kind, decision.gang_uid, decision.pod_uid, decision.node, decision.devices
    ).where(decision.state == "pending", still_counts(expire_before))
    decision_rows = (await session.execute(counted)).all()
    snapshot = memory.cache.build(mirror, decision_rows, memory, now=now)
    return ReadResult(snapshot, mirror.conf_text, mirror.verdicts, quiet=memory.cache.quiet)


def build_snapshot(
    *,
    now: datetime,
    # Rows of the tables of the same names: Core rows or ORM instances (tests), read by attribute.
    queues: Collection[Any],
    nodes: Collection[Any],
    priority_classes: Collection[Any],
    groups: Collection[Any],
    pods: Collection[Any],
    decisions: Collection[Any],
    memory: ShellMemory,
    budgets: Collection[Any] = (),
    storage: Collection[Any] = (),
    devices: Collection[Any] = (),
    hyper_nodes: Collection[Any] = (),
) -> core.Snapshot:
    """The core's snapshot built whole from the rows; objects built from unchanged rows are
    reused from `memory`. The cycle builds it incrementally instead (snapshot_cache.py), and
    must get the same."""
    decided = parts.Decided.of(decisions)
    priorities = {p.name: p.value for p in priority_classes}
    queue_infos = parts.queues_of(queues)
    dra = DeviceSnapshot.of(devices, decisions, memory)
    claims = parts.Claims(storage, dra)
    members: dict[tuple[str, str], list[core.TaskInfo]] = defaultdict(list)
    others: list[core.OtherPod] = []
    for pod in pods:
        if parts.is_member(pod):
            members[parts.pod_gang(pod)].append(parts.member_task(pod, memory, decided, claims))
        elif parts.is_other(pod):
            others.append(parts.other_pod(pod, memory))
    below_min = memory.below_min_since
    gangs = sorted(
        (
            parts.gang_info(g, members.get(parts.group_key(g), ()), priorities, decided, below_min)
            for g in groups
        ),
        key=parts.gang_order,
    )
    memory.forget_unseen(len(pods) + len(nodes))
    return core.Snapshot(
        nodes=parts.nodes_of(nodes, memory, dra),
        queues=queue_infos,
        gangs=tuple(gangs),
        now=now,
        priority_classes=priorities,
        other_pods=tuple(others),
        budgets=parts.budgets_of(budgets),
        devices_taken=frozenset() if dra is None else dra.taken,
        hyper_nodes=parts.hyper_nodes_of(hyper_nodes, memory),
        settled=settled_of(gangs, {q.name for q in queue_infos}),
        unjoined=parts.unjoined(gangs, {p.uid: p for p in pods}),
    )
