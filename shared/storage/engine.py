"""The async SQLAlchemy engine and session factory, built from settings (never at import time)."""

from __future__ import annotations

import orjson
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.ext.asyncio import AsyncSession as AsyncSession

from shared.config import PostgresSettings


def make_engine(settings: PostgresSettings) -> AsyncEngine:
    return create_async_engine(
        settings.url,
        pool_size=settings.pool_size,
        max_overflow=settings.pool_size,
        # No ping before each checkout: it doubled the round trips of the controller's short
        # transactions. A connection broken by a database restart fails its one transaction, the
        # message handler is retried (bus redelivery), and the pool replaces the connection.
        pool_pre_ping=False,
        # JSONB columns (requests, labels, placement) are decoded for every row of a snapshot;
        # orjson does it several times faster than the standard library.
        json_serializer=_dumps,
        json_deserializer=orjson.loads,
    )


def _dumps(value: object) -> str:
    return orjson.dumps(value).decode()


def make_sessions(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
