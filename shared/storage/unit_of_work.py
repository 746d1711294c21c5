"""One unit of work: rows and the messages that announce them, committed together, then published.

Every shell that changes its tables and must tell the others does the same three things: write
the rows, put the messages into its outbox in the same transaction, and wake the outbox relay once
the transaction has committed (outbox.py). `unit_of_work` does them in that order:

    async with unit_of_work(sessions, tables.ControllerOutbox, wake=relay.kick) as work:
        await work.session.execute(...)
        work.publish_after(subject, event)

A transaction that fails or is rolled back announces nothing, and the relay is woken only when
something was announced.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shared.messages.envelope import CloudEvent
from shared.storage.outbox import enqueue_many
from shared.storage.tables import _Outbox

Announcement = tuple[str, CloudEvent[Any]]


class UnitOfWork:
    """The open transaction (`session`) and the messages to publish once it commits."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.announced: list[Announcement] = []

    def publish_after(self, subject: str, event: CloudEvent[Any]) -> None:
        self.announced.append((subject, event))

    def publish_all_after(self, announcements: Iterable[Announcement]) -> None:
        self.announced.extend(announcements)


@asynccontextmanager
async def unit_of_work(
    sessions: async_sessionmaker[AsyncSession], outbox: type[_Outbox], *, wake: Callable[[], None]
) -> AsyncIterator[UnitOfWork]:
    async with sessions() as session, session.begin():
        work = UnitOfWork(session)
        yield work
        if work.announced:
            enqueue_many(session, outbox, work.announced)
    if work.announced:
        wake()
