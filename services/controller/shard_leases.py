"""Shell: the controller replica's leases on shards of the job-key space, in PostgreSQL.

`controller_shards` has one row per shard (holder, epoch, expires_at); `controller_members` one
per live replica. Every `lease_seconds / 3` a replica, in one transaction: renews its membership
and the shards it holds (only where the row still names it and the epoch it took them with), reads
every row, and applies `core.sharding.plan_shards`: take free or expired shards up to its fair part
(each take moves the epoch), give back what is above it. A replica that joins makes the others
give back; one that dies stops renewing and its shards are free after `lease_seconds`.

The fence: the Kubernetes API takes no fencing token, so a replica acts for a shard only while
its lease is valid by its own clock, counted from *before* the renewal that granted it and ending
`margin` earlier than the row's expiry; a renewal that finds the row taken (another epoch) drops
the shard at once. `acts_for` is asked before handling any object; `guard` before every write
(kube_writes.py), against the job the running handler acts for (`ACTING_FOR`), so a handler that
was running when its shard moved stops at its next write. Writes are idempotent and named, so the
narrow overlap that remains (a write already on the wire) creates nothing twice.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

import structlog
from prometheus_client import Counter, Gauge
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.controller.core.sharding import JobKey, ShardRow, plan_shards, shard_of

log = structlog.get_logger()
SHARDS_HELD = Gauge("phalanx_controller_shards_held", "Shards of the job-key space this replica acts for.")
SHARDS_MOVED = Counter(
    "phalanx_controller_shard_hand_overs",
    "Shards this replica stopped acting for: given back to a joining replica, or found taken.",
    ["why"],
)

# The job the running handler acts for; None outside any handler (start-up, the relay).
ACTING_FOR: contextvars.ContextVar[JobKey | None] = contextvars.ContextVar("acting_for", default=None)


class ShardLost(Exception):
    """This replica no longer holds the shard of the job its handler acts for: it must not write."""


class ReplicaNameTaken(Exception):
    """Another live process runs as this replica number."""


class ShardCountMismatch(Exception):
    """The table has another number of shards than this replica was configured with."""


@contextmanager
def acting_for(key: JobKey) -> Iterator[None]:
    token = ACTING_FOR.set(key)
    try:
        yield
    finally:
        ACTING_FOR.reset(token)


class ShardLeases:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        holder: str,
        shards: int,
        lease_seconds: float,
        margin_seconds: float | None = None,
    ) -> None:
        self._sessions = sessions
        self.holder = holder
        self.shards = shards
        self.lease = lease_seconds
        self._margin = lease_seconds / 5 if margin_seconds is None else margin_seconds
        self._held: dict[int, int] = {}  # shard -> epoch we took it with
        self._valid_until = 0.0  # monotonic: when our leases stop being ours by our clock
        self.on_gained: Callable[[frozenset[int]], Coroutine[Any, Any, None]] | None = None
        self.hand_overs = 0  # shards given back or lost since start (metrics, tests)
        self._first_step = True
        self._refused: set[JobKey] = set()  # jobs turned away while our leases had lapsed
        self._turned_away: set[JobKey] = set()  # of those, the ones a renewal kept ours
        self.on_turned_away: Callable[[frozenset[JobKey]], Coroutine[Any, Any, None]] | None = None
        self._syncs: set[asyncio.Task[None]] = set()

    # -- asked by the handlers -------------------------------------------------------------------

    def acts_for(self, key: JobKey) -> bool:
        shard = shard_of(key, self.shards)
        if shard not in self._held:
            return False
        if time.monotonic() < self._valid_until:
            return True
        # Held, but lapsed by our clock (a late renewal): what was turned away for this job is
        # synced again once a renewal finds its shard still ours (`take_turned_away`).
        self._refused.add(key)
        return False

    def guard(self) -> None:
        """Before a write: raise ShardLost when the running handler's job is no longer ours."""
        key = ACTING_FOR.get()
        if key is not None and not self.acts_for(key):
            shard = shard_of(key, self.shards)
            raise ShardLost(f"shard {shard} of {key[0]}/{key[1]} moved to another replica")

    @property
    def held(self) -> frozenset[int]:
        return frozenset(self._held)

    # -- the renewal loop --------------------------------------------------------------------------

    async def join(self, *, patience: int = 3) -> frozenset[int]:
        """The first renewal, once no other live replica has this one's replica name: two
        processes configured with the same `replica` would share its durable consumers, each
        seeing part of the stream. One that persists over `patience` leases is refused."""
        for _ in range(patience):
            twins = await self._twins()
            if not twins:
                return await self.step()
            log.warning("another live replica has this replica's name; waiting for it to go", twins=twins)
            await asyncio.sleep(self.lease)
        raise ReplicaNameTaken(
            f"CONTROLLER_REPLICA: replica name {self._replica_name()!r} is in use by {', '.join(twins)}; "
            "give every controller replica its own number"
        )

    def _replica_name(self) -> str:
        return self.holder.rsplit("/", 1)[-1]

    async def _twins(self) -> list[str]:
        async with self._sessions() as session:
            rows = await session.execute(
                text(
                    "SELECT holder FROM controller_members "
                    "WHERE expires_at > now() AND holder <> :me AND holder LIKE :same"
                ),
                {"me": self.holder, "same": f"%/{self._replica_name()}"},
            )
        return [str(holder) for (holder,) in rows]

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.lease / 3)
            try:
                gained = await self.step()
            except ShardCountMismatch:
                raise
            except Exception as error:  # the database is away: our leases run out by our clock
                log.warning("shard lease renewal failed", error=str(error))
                continue
            # Apart from the renewals: syncing many jobs must not make the leases lapse.
            if gained and self.on_gained is not None:
                self._sync(self.on_gained(gained))
            turned_away = self.take_turned_away()
            if turned_away and self.on_turned_away is not None:
                self._sync(self.on_turned_away(turned_away))

    def _sync(self, work: Coroutine[Any, Any, None]) -> None:
        sync = asyncio.create_task(work)
        self._syncs.add(sync)
        sync.add_done_callback(self._synced)

    def _synced(self, task: asyncio.Task[None]) -> None:
        self._syncs.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("sync of taken shards failed", error=repr(task.exception()))

    def take_turned_away(self) -> frozenset[JobKey]:
        """The jobs a handler was turned away for while our leases had run out by our clock
        (PostgreSQL was away, or the machine starved the renewal), whose shards a renewal has
        since found still ours: changes seen then were not reacted to, so the caller syncs these
        jobs again (only these: a whole shard's resync on a starved machine would starve it more)."""
        taken, self._turned_away = frozenset(self._turned_away), set()
        return taken

    async def step(self) -> frozenset[int]:
        """One renewal; returns the shards newly taken (the caller resyncs their jobs). The jobs
        turned away meanwhile wait in `take_turned_away`: a renewal asked in time and answered
        late counts too, since the refusals are read once it is answered."""
        asked = time.monotonic()
        async with self._sessions() as session, session.begin():
            await self._ensure_rows(session)
            await session.execute(
                text(
                    "INSERT INTO controller_members (holder, expires_at) "
                    "VALUES (:me, now() + make_interval(secs => :lease)) "
                    "ON CONFLICT (holder) DO UPDATE SET expires_at = EXCLUDED.expires_at"
                ),
                {"me": self.holder, "lease": self.lease},
            )
            renewed = await self._renew(session)
            lost = set(self._held) - renewed
            for shard in lost:
                self._held.pop(shard)
            rows, live = await self._read(session)
            plan = plan_shards(rows, self.holder, live)
            taken = await self._take(session, sorted(plan.take)) if plan.take else {}
            if plan.give_back:
                # Stop acting first, then free the rows: nothing of ours runs for them once they go.
                for shard in plan.give_back:
                    self._held.pop(shard, None)
                await session.execute(
                    text(
                        "UPDATE controller_shards SET expires_at = '-infinity' "
                        "WHERE holder = :me AND shard = ANY(CAST(:shards AS integer[]))"
                    ),
                    {"me": self.holder, "shards": sorted(plan.give_back)},
                )
        self._held.update(taken)
        self._turned_away |= {key for key in self._refused if shard_of(key, self.shards) in renewed}
        self._refused.clear()
        self._first_step = False
        self._valid_until = asked + self.lease - self._margin
        SHARDS_HELD.set(len(self._held))
        SHARDS_MOVED.labels("given back").inc(len(plan.give_back))
        SHARDS_MOVED.labels("taken by another").inc(len(lost))
        if lost or plan.give_back:
            self.hand_overs += len(lost) + len(plan.give_back)
            log.info("shards handed over", lost=sorted(lost), given_back=sorted(plan.give_back))
        if taken:
            log.info("shards taken", shards=sorted(taken), holding=len(self._held))
        return frozenset(taken)

    async def release(self) -> None:
        """On a clean stop: give every shard back at once, so the others need not wait it out."""
        held, self._held = sorted(self._held), {}
        async with self._sessions() as session, session.begin():
            await session.execute(
                text(
                    "UPDATE controller_shards SET expires_at = '-infinity' "
                    "WHERE holder = :me AND shard = ANY(CAST(:shards AS integer[]))"
                ),
                {"me": self.holder, "shards": held},
            )
            await session.execute(
                text("DELETE FROM controller_members WHERE holder = :me"), {"me": self.holder}
            )

    async def _ensure_rows(self, session: AsyncSession) -> None:
        count = (await session.execute(text("SELECT count(*) FROM controller_shards"))).scalar_one()
        if count not in (0, self.shards):
            raise ShardCountMismatch(
                f"CONTROLLER_SHARDS is {self.shards} but the controller_shards table has {count} shards; "
                "every replica must be configured with the same number"
            )
        await session.execute(
            text(
                "INSERT INTO controller_shards (shard, holder, epoch, expires_at) "
                "SELECT s, '', 0, '-infinity' FROM generate_series(0, :last) AS s "
                "ON CONFLICT (shard) DO NOTHING"
            ),
            {"last": self.shards - 1},
        )

    async def _renew(self, session: AsyncSession) -> set[int]:
        if not self._held:
            return set()
        rows = await session.execute(
            text(
                "UPDATE controller_shards AS s SET expires_at = now() + make_interval(secs => :lease) "
                "FROM unnest(CAST(:shards AS integer[]), CAST(:epochs AS bigint[])) AS mine(shard, epoch) "
                "WHERE s.shard = mine.shard AND s.epoch = mine.epoch AND s.holder = :me "
                "RETURNING s.shard"
            ),
            {
                "me": self.holder,
                "lease": self.lease,
                "shards": list(self._held),
                "epochs": list(self._held.values()),
            },
        )
        return {int(shard) for (shard,) in rows}

    async def _read(self, session: AsyncSession) -> tuple[list[ShardRow], set[str]]:
        shard_rows = await session.execute(
            text("SELECT shard, holder, expires_at < now() FROM controller_shards ORDER BY shard")
        )
        rows = []
        for shard, holder, expired in shard_rows:
            # At start, a row under our name is a previous run's (a restart with the same
            # identity): free for us to take, with a new epoch. Later, it is a newer run's.
            not_this_run = holder == self.holder and int(shard) not in self._held
            if not_this_run and not self._first_step:
                holder = f"{holder} (another process)"  # never ours to renew or give back
            rows.append(
                ShardRow(int(shard), str(holder), bool(expired) or (not_this_run and self._first_step))
            )
        live = text("SELECT holder FROM controller_members WHERE expires_at > now()")
        members = await session.execute(live)
        return rows, {str(holder) for (holder,) in members}

    async def _take(self, session: AsyncSession, shards: list[int]) -> dict[int, int]:
        rows = await session.execute(
            text(
                "UPDATE controller_shards SET holder = :me, epoch = epoch + 1, "
                "  expires_at = now() + make_interval(secs => :lease) "
                "WHERE shard = ANY(CAST(:shards AS integer[])) AND (expires_at < now() OR holder = :me) "
                "RETURNING shard, epoch"
            ),
            {"me": self.holder, "lease": self.lease, "shards": shards},
        )
        return {int(shard): int(epoch) for shard, epoch in rows}
