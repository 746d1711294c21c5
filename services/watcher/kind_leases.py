"""Shell: which watcher replica publishes each watched kind, by a lease per kind in PostgreSQL.

`watcher_leases` has one row per kind (holder, epoch, expires_at, resource_version). Every
`lease_seconds / 3` a replica renews the kinds it publishes, writing with each renewal the
resourceVersion its watch has published (and had acknowledged) up to, and takes any kind whose
lease ran out. A kind taken from another replica resumes its watch at that resourceVersion, with
no relist, unless the API server has forgotten it (410 Gone: then a relist, as always); a kind
taken at this replica's start, or from a previous run of the same identity, relists first, as a
start always did (level-triggered).

Why a lost renewal does not stop the active replica at once: the watcher's events are facts the
API server published, with ids made of uid, resourceVersion and change, so two replicas
publishing one kind for a moment publish the same events, which JetStream's duplicate window and
the consumers' resourceVersion checks drop. The lease is about not doing the work twice, not about
safety; so a replica that cannot reach PostgreSQL keeps publishing (a database restart must not
stop the cluster's events), and stops a kind only when a renewal finds another holder on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

# The rows of the kinds we hold, each with the epoch we took it with and our newest resume point
# (empty: none yet, keep the row's).
_OURS = (
    "FROM unnest(CAST(:kinds AS varchar[]), CAST(:epochs AS bigint[]), CAST(:versions AS varchar[])) "
    "  AS mine(kind, epoch, version) "
    "WHERE l.kind = mine.kind AND l.epoch = mine.epoch AND l.holder = :me"
)
_RESUME_POINT = "resource_version = CASE WHEN mine.version = '' THEN l.resource_version ELSE mine.version END"
Held = Mapping[str, tuple[int, str]]  # kind -> (epoch, resume point)


@dataclass(frozen=True)
class Taken:
    kind: str
    epoch: int
    resume_from: str | None  # the resourceVersion to watch from; None: relist first


class KindLeases:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], *, holder: str, lease_seconds: float
    ) -> None:
        self._sessions = sessions
        self.holder = holder
        self.lease = lease_seconds

    async def step(self, held: Held, wanted: Iterable[str]) -> tuple[set[str], list[Taken]]:
        """Renew `held` and take what of `wanted` is free.

        Returns the held kinds still ours and the kinds newly taken."""
        async with self._sessions() as session, session.begin():
            await session.execute(
                text(
                    "INSERT INTO watcher_leases (kind, holder, epoch, expires_at) "
                    "SELECT k, '', 0, '-infinity' FROM unnest(CAST(:kinds AS varchar[])) AS k "
                    "ON CONFLICT (kind) DO NOTHING"
                ),
                {"kinds": sorted(set(wanted) | set(held))},
            )
            kept = await self._renew(session, held)
            taken = await self._take(session, [k for k in wanted if k not in held])
        return kept, taken

    async def _renew(self, session: AsyncSession, held: Held) -> set[str]:
        if not held:
            return set()
        rows = await session.execute(
            text(
                "UPDATE watcher_leases AS l SET expires_at = now() + make_interval(secs => :lease), "
                f"{_RESUME_POINT} {_OURS} RETURNING l.kind"
            ),
            {"me": self.holder, "lease": self.lease, **_columns(held)},
        )
        return {str(kind) for (kind,) in rows}

    async def _take(self, session: AsyncSession, kinds: list[str]) -> list[Taken]:
        if not kinds:
            return []
        # The previous holder and resume point are read in the same statement that takes the row.
        rows = await session.execute(
            text(
                "UPDATE watcher_leases AS l SET holder = :me, epoch = l.epoch + 1, "
                "  expires_at = now() + make_interval(secs => :lease) "
                "FROM (SELECT kind, holder, resource_version FROM watcher_leases "
                "      WHERE kind = ANY(CAST(:kinds AS varchar[])) FOR UPDATE) AS before "
                "WHERE l.kind = before.kind AND (l.expires_at < now() OR l.holder = :me) "
                "RETURNING l.kind, l.epoch, before.holder, before.resource_version"
            ),
            {"me": self.holder, "lease": self.lease, "kinds": kinds},
        )
        taken = []
        for kind, epoch, previous, version in rows:
            # From another replica: resume where it got to. Our own name's (a restart) or nobody's:
            # relist, as every start does.
            resume = str(version) if previous not in ("", self.holder) and version else None
            taken.append(Taken(str(kind), int(epoch), resume))
        return taken

    async def release(self, kinds: Held) -> None:
        """On a clean stop: hand every kind over at once, with its resume point."""
        if not kinds:
            return
        async with self._sessions() as session, session.begin():
            await session.execute(
                text(f"UPDATE watcher_leases AS l SET expires_at = '-infinity', {_RESUME_POINT} {_OURS}"),
                {"me": self.holder, **_columns(kinds)},
            )


def _columns(held: Held) -> dict[str, list[Any]]:
    return {
        "kinds": list(held),
        "epochs": [epoch for epoch, _ in held.values()],
        "versions": [version for _, version in held.values()],
    }
