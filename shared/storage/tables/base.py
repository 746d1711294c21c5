"""What every table shares: the declarative base and its naming convention, the change sequence
and columns of projected rows, and the columns of an outbox.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    LargeBinary,
    MetaData,
    String,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dict[str, Any]: JSONB, datetime: DateTime(timezone=True)}


CHANGE_SEQUENCE = "scheduler_change_seq"


class _Projected:
    """Columns of every row the ingester projects from a Kubernetes object."""

    resource_version: Mapped[int] = mapped_column(BigInteger, default=0)
    relist_id: Mapped[str | None] = mapped_column(String(64))
    deleted: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    # Drawn anew each time ingest writes the row (migration 0006): the cycle reads only rows past
    # the last number it saw (services/scheduler/mirror.py).
    change_seq: Mapped[int] = mapped_column(
        BigInteger, server_default=text(f"nextval('{CHANGE_SEQUENCE}')"), index=True
    )


class _Outbox:
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    subject: Mapped[str] = mapped_column(Text)
    msg_id: Mapped[str] = mapped_column(String(200))
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
    published_at: Mapped[datetime | None]
