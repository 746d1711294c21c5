"""The table the watcher writes: one lease per watched kind."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    String,
)
from sqlalchemy.orm import Mapped, mapped_column

from shared.storage.tables.base import Base


class WatcherLease(Base):
    """One watched kind: the watcher replica that publishes it, and where its watch stands, so a
    standby that takes the kind over resumes there instead of relisting."""

    __tablename__ = "watcher_leases"
    kind: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(253))
    epoch: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[datetime]
    resource_version: Mapped[str] = mapped_column(String(64), server_default="")
