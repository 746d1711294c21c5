"""The async SQLAlchemy engine and session factory, built from settings (never at import time).

Every connection is bounded: connecting, each statement, each lock wait and a transaction left
idle all time out (PostgresSettings), and the server probes the client with TCP keepalives. A
process that hangs or loses its network inside a transaction (a paused scheduler leader holding
the leader row) is cut off by the server, so standbys and other writers wait a bounded time.
"""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.ext.asyncio import AsyncSession as AsyncSession

from shared.config import PostgresSettings


def make_engine(settings: PostgresSettings) -> AsyncEngine:
    return create_async_engine(
        settings.url,
        connect_args=_connect_args(settings),
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


def _connect_args(settings: PostgresSettings) -> dict[str, Any]:
    """asyncpg's connection arguments: client-side timeouts and the session's server settings."""
    if "asyncpg" not in make_url(settings.url).drivername:
        return {}
    server = {
        "statement_timeout": _ms(settings.statement_timeout_seconds),
        "lock_timeout": _ms(settings.lock_timeout_seconds),
        "idle_in_transaction_session_timeout": _ms(settings.idle_in_transaction_timeout_seconds),
        # The server notices a vanished client in about 25 s and ends its transaction.
        "tcp_keepalives_idle": "10",
        "tcp_keepalives_interval": "5",
        "tcp_keepalives_count": "3",
    }
    return {
        "timeout": settings.connect_timeout_seconds,
        # The client gives up on a server that stopped answering (blackholed, half-open) a little
        # after the server itself would have cancelled the statement.
        "command_timeout": settings.statement_timeout_seconds + 5,
        "server_settings": server,
    }


def _ms(seconds: float) -> str:
    return str(max(1, int(seconds * 1000)))


def _dumps(value: object) -> str:
    return orjson.dumps(value).decode()


def make_sessions(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
