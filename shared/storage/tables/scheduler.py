"""Tables the scheduler's cycle and leadership write: decisions, verdicts, fair-share history,
the leader row and the scheduler's outbox.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    DateTime,
    Float,
    Index,
    Integer,
    String,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from shared.storage.tables.base import Base, _Outbox


class Decision(Base):
    """What a cycle decided; `pending` until the cluster shows it done (then `confirmed`), or
    until it stops counting, ingest having caught up past its time-to-live (then `expired`)."""

    __tablename__ = "decisions"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    epoch: Mapped[int] = mapped_column(BigInteger)
    cycle: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(16))  # enqueue | bind | evict
    gang_uid: Mapped[str] = mapped_column(String(64))
    pod_uid: Mapped[str | None] = mapped_column(String(64))
    node: Mapped[str | None] = mapped_column(String(253))
    # A bind's DRA devices: [{claim_namespace, claim_name, request, driver, pool, device}] (0012).
    devices: Mapped[list[Any] | None] = mapped_column(JSONB)
    state: Mapped[str] = mapped_column(String(16), default="pending")
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
    __table_args__ = (
        Index("ix_decisions_pending", "kind", "pod_uid", postgresql_where=text("state = 'pending'")),
        Index(None, "gang_uid"),
    )


class GangVerdictRow(Base):
    """Why the last cycle left a gang unplaced: the answer to "why is my job pending?".

    Written when the verdict changes, so `cycle` is the cycle that first gave it."""

    __tablename__ = "gang_verdicts"
    gang_uid: Mapped[str] = mapped_column(String(64), primary_key=True)
    namespace: Mapped[str] = mapped_column(String(253))
    name: Mapped[str] = mapped_column(String(253))
    queue: Mapped[str] = mapped_column(String(253))
    reason: Mapped[str] = mapped_column(String(64))
    condition_reason: Mapped[str] = mapped_column(String(64))
    message: Mapped[str] = mapped_column(Text)
    cycle: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[datetime] = mapped_column(server_default=func.now())


class QueueShareSample(Base):
    """Each queue's share (allocated over deserved, dominant resource) sampled by the leading
    scheduler about once a minute, for the console's chart; rows older than the kept hours are
    deleted as new ones come (services/scheduler/share_history.py)."""

    __tablename__ = "queue_share_history"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    queue: Mapped[str] = mapped_column(String(253))
    sampled_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    share: Mapped[float] = mapped_column(Float)
    __table_args__ = (Index(None, "sampled_at"), Index(None, "queue", "sampled_at"))


class QueueUsageRow(Base):
    """Each queue's decayed usage (fairshare): resource -> share of the cluster x seconds, as of
    `updated_at`; written by the leading scheduler in its fenced commit (queue_usage.py)."""

    __tablename__ = "queue_usage"
    queue: Mapped[str] = mapped_column(String(253), primary_key=True)
    usage: Mapped[dict[str, Any]] = mapped_column(JSONB)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class RuntimeRecord(Base):
    """Each gang's runtime estimate when it started and its actual runtime when it ended, written
    by the leading scheduler (services/scheduler/runtime_records.py): the history estimates are
    learned from, and how accurate estimates were (docs/backfill.md)."""

    __tablename__ = "runtime_records"
    gang_uid: Mapped[str] = mapped_column(String(64), primary_key=True)
    namespace: Mapped[str] = mapped_column(String(253))
    name: Mapped[str] = mapped_column(String(253))
    queue: Mapped[str] = mapped_column(String(253))
    job_class: Mapped[str | None] = mapped_column(String(253))
    estimate_seconds: Mapped[float | None] = mapped_column(Float)
    estimate_source: Mapped[str] = mapped_column(String(32))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    actual_seconds: Mapped[float | None] = mapped_column(Float)
    outcome: Mapped[str | None] = mapped_column(String(16))  # Succeeded | Failed
    __table_args__ = (Index(None, "queue", "job_class", "finished_at"),)


class SchedulerLeader(Base):
    """The single leadership row: whoever holds an unexpired lease may commit, with its epoch."""

    __tablename__ = "scheduler_leader"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    holder: Mapped[str] = mapped_column(String(253))
    epoch: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[datetime]


class SchedulerOutbox(_Outbox, Base):
    __tablename__ = "scheduler_outbox"
    __table_args__ = (
        Index("ix_scheduler_outbox_unpublished", "id", postgresql_where=text("published_at IS NULL")),
    )
