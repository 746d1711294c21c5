"""Shell: one active scheduler cycle at a time, fenced by an epoch in PostgreSQL.

A scheduler holds the single `scheduler_leader` row while its lease is unexpired. Taking the row
over bumps the epoch. Every commit of decisions first locks the row `FOR SHARE` and checks that it
still names this holder and epoch, inside the commit's own transaction: a takeover (which needs the
row exclusively) waits for that commit, and every commit after a takeover fails. So two schedulers
never both commit, even if one is paused past its lease and wakes up believing it leads.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker


class LostLeadership(Exception):
    """The lease moved to another scheduler; decisions of this epoch must not be committed."""


def default_holder() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class Leadership:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], *, holder: str, lease_seconds: float
    ) -> None:
        self._sessions = sessions
        self.holder = holder
        self._lease = lease_seconds
        self.epoch: int | None = None
        # The database's clock at the last fence: decisions say by when, on that clock, they
        # may be carried out (valid_until), so no two hosts' clocks are compared.
        self.fenced_at: datetime | None = None

    @property
    def is_leader(self) -> bool:
        return self.epoch is not None

    async def try_acquire_or_renew(self) -> bool:
        """Renew our lease, or take the row over if its lease expired; True while we lead."""
        async with self._sessions() as session, session.begin():
            await session.execute(
                text(
                    "INSERT INTO scheduler_leader (id, holder, epoch, expires_at) "
                    "VALUES (1, '', 0, '-infinity') ON CONFLICT (id) DO NOTHING"
                )
            )
            row = (
                await session.execute(
                    text(
                        "UPDATE scheduler_leader SET "
                        "  epoch = CASE WHEN holder = :holder AND epoch = :epoch THEN epoch "
                        "               ELSE epoch + 1 END, "
                        "  holder = :holder, "
                        "  expires_at = now() + make_interval(secs => :lease) "
                        "WHERE id = 1 AND ((holder = :holder AND epoch = :epoch) OR expires_at < now()) "
                        "RETURNING epoch"
                    ),
                    {"holder": self.holder, "epoch": self.epoch or -1, "lease": self._lease},
                )
            ).first()
        self.epoch = int(row[0]) if row else None
        return self.epoch is not None

    async def fence(self, session: AsyncSession) -> int:
        """Inside a commit's transaction: prove we still lead, holding the row until commit."""
        if self.epoch is None:
            raise LostLeadership("not the leader")
        row = (
            await session.execute(
                text(
                    "SELECT epoch, now() FROM scheduler_leader "
                    "WHERE id = 1 AND holder = :holder AND epoch = :epoch AND expires_at > now() "
                    "FOR SHARE"
                ),
                {"holder": self.holder, "epoch": self.epoch},
            )
        ).first()
        if row is None:
            self.epoch = None
            raise LostLeadership("the lease was taken over or expired")
        self.fenced_at = row[1]
        return int(row[0])

    async def release(self) -> None:
        if self.epoch is None:
            return
        async with self._sessions() as session, session.begin():
            await session.execute(
                text(
                    "UPDATE scheduler_leader SET expires_at = now() "
                    "WHERE id = 1 AND holder = :holder AND epoch = :epoch"
                ),
                {"holder": self.holder, "epoch": self.epoch},
            )
        self.epoch = None
