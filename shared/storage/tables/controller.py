"""Tables the controller writes: job lifecycle records, applied commands, fences, timers, its
outbox and its shard leases.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Index,
    Integer,
    String,
    func,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from shared.storage.tables.base import Base, _Outbox


class JobRecord(Base):
    """The controller's lifecycle record of a Volcano Job (what the pure lifecycle needs to resume)."""

    __tablename__ = "jobs"
    uid: Mapped[str] = mapped_column(String(64), primary_key=True)
    namespace: Mapped[str] = mapped_column(String(253))
    name: Mapped[str] = mapped_column(String(253))
    phase: Mapped[str] = mapped_column(String(32))
    retry_count: Mapped[int] = mapped_column(Integer, default=0)
    version: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[dict[str, Any]]
    updated_at: Mapped[datetime] = mapped_column(server_default=func.now())
    __table_args__ = (Index(None, "namespace", "name"),)


class AppliedCommand(Base):
    """A bus.volcano.sh Command the controller carried out: each is carried out exactly once."""

    __tablename__ = "applied_commands"
    uid: Mapped[str] = mapped_column(String(64), primary_key=True)
    namespace: Mapped[str] = mapped_column(String(253))
    name: Mapped[str] = mapped_column(String(253))
    action: Mapped[str] = mapped_column(String(32))
    target: Mapped[str] = mapped_column(String(512))
    applied_at: Mapped[datetime] = mapped_column(server_default=func.now())


class GangFence(Base):
    """The newest scheduler decision (epoch, then cycle) the controller acted on per gang; older
    decisions are ignored."""

    __tablename__ = "gang_fences"
    gang_uid: Mapped[str] = mapped_column(String(64), primary_key=True)
    epoch: Mapped[int] = mapped_column(BigInteger)
    cycle: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))


class JobTimer(Base):
    """A job's pending deadline (a policy's delayed action, or its TTL): re-armed when the controller
    starts, deleted when the transition that cancels it happens or once it has fired."""

    __tablename__ = "job_timers"
    job_uid: Mapped[str] = mapped_column(String(64), primary_key=True)
    key: Mapped[str] = mapped_column(String(253), primary_key=True)
    due: Mapped[datetime]
    action: Mapped[str] = mapped_column(String(32))
    event: Mapped[str] = mapped_column(String(32), default="")
    task: Mapped[str] = mapped_column(String(253), default="")
    pod: Mapped[str] = mapped_column(String(253), default="")
    pod_uid: Mapped[str] = mapped_column(String(64), default="")
    partition: Mapped[str] = mapped_column(String(253), default="")


class ControllerOutbox(_Outbox, Base):
    __tablename__ = "controller_outbox"
    __table_args__ = (
        Index("ix_controller_outbox_unpublished", "id", postgresql_where=text("published_at IS NULL")),
    )


class ControllerShard(Base):
    """One shard of the job-key space: the controller replica that acts for its jobs, and the
    epoch that moves whenever another process takes it (services/controller/shard_leases.py)."""

    __tablename__ = "controller_shards"
    shard: Mapped[int] = mapped_column(Integer, primary_key=True)
    holder: Mapped[str] = mapped_column(String(253))
    epoch: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[datetime]


class ControllerMember(Base):
    """A live controller replica; each aims at its fair part of the shards among the live ones."""

    __tablename__ = "controller_members"
    holder: Mapped[str] = mapped_column(String(253), primary_key=True)
    expires_at: Mapped[datetime]
