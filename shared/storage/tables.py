"""The scheduling database schema: SQLAlchemy 2.0 models, the Alembic target metadata.

One service writes each table (see `OWNERS` and migrations/README.md). The scheduler's ingester
projects cluster objects into `queues`, `nodes`, `priority_classes`, `pod_groups`, `pods`,
`disruption_budgets` and `storage_objects`; its cycle writes `decisions`, `gang_verdicts` and its
outbox under a fenced leadership row. The controller keeps job lifecycle records, applied commands
and its own outbox. Resource amounts are JSON maps of integer milli-units (see shared.domain.resources).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    Index,
    Integer,
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


# -- written by the scheduler (ingest) -----------------------------------------------------------


class Queue(_Projected, Base):
    __tablename__ = "queues"
    name: Mapped[str] = mapped_column(String(253), primary_key=True)
    uid: Mapped[str | None] = mapped_column(String(64))
    weight: Mapped[int] = mapped_column(Integer, default=1)
    capability: Mapped[dict[str, Any] | None]
    guarantee: Mapped[dict[str, Any] | None]
    deserved: Mapped[dict[str, Any] | None]
    reclaimable: Mapped[bool] = mapped_column(Boolean, default=True)
    state: Mapped[str] = mapped_column(String(16), default="Open")
    parent: Mapped[str | None] = mapped_column(String(253))
    priority: Mapped[int] = mapped_column(Integer, default=0)
    annotations: Mapped[dict[str, Any] | None]  # hierarchical drf: volcano.sh/hierarchy(-weights)


class Node(_Projected, Base):
    __tablename__ = "nodes"
    name: Mapped[str] = mapped_column(String(253), primary_key=True)
    uid: Mapped[str | None] = mapped_column(String(64))
    allocatable: Mapped[dict[str, Any]]
    labels: Mapped[dict[str, Any]]
    taints: Mapped[dict[str, Any] | None]
    unschedulable: Mapped[bool] = mapped_column(Boolean, default=False)
    ready: Mapped[bool] = mapped_column(Boolean, default=True)


class PriorityClass(_Projected, Base):
    __tablename__ = "priority_classes"
    name: Mapped[str] = mapped_column(String(253), primary_key=True)
    value: Mapped[int] = mapped_column(Integer, default=0)
    global_default: Mapped[bool] = mapped_column(Boolean, default=False)


class PodGroup(_Projected, Base):
    __tablename__ = "pod_groups"
    uid: Mapped[str] = mapped_column(String(64), primary_key=True)
    namespace: Mapped[str] = mapped_column(String(253))
    name: Mapped[str] = mapped_column(String(253))
    queue: Mapped[str] = mapped_column(String(253), default="default")
    min_member: Mapped[int] = mapped_column(Integer, default=1)
    min_task_member: Mapped[dict[str, Any] | None]
    min_resources: Mapped[dict[str, Any] | None]
    priority_class: Mapped[str | None] = mapped_column(String(253))
    phase: Mapped[str] = mapped_column(String(32), default="Pending")
    created_at: Mapped[datetime]
    annotations: Mapped[dict[str, Any] | None]  # task-topology: volcano.sh/task-topology-*
    __table_args__ = (Index(None, "namespace", "name"),)


class Pod(_Projected, Base):
    __tablename__ = "pods"
    uid: Mapped[str] = mapped_column(String(64), primary_key=True)
    namespace: Mapped[str] = mapped_column(String(253))
    name: Mapped[str] = mapped_column(String(253))
    group_name: Mapped[str | None] = mapped_column(String(253))
    task_role: Mapped[str | None] = mapped_column(String(253))
    scheduler_name: Mapped[str | None] = mapped_column(String(253))
    ours: Mapped[bool] = mapped_column(Boolean, default=True)
    request: Mapped[dict[str, Any]]
    node_name: Mapped[str | None] = mapped_column(String(253))
    phase: Mapped[str] = mapped_column(String(32), default="Pending")
    priority: Mapped[int] = mapped_column(Integer, default=0)
    priority_class: Mapped[str | None] = mapped_column(String(253))
    placement: Mapped[dict[str, Any] | None]  # nodeSelector, affinity, tolerations
    created_at: Mapped[datetime]
    __table_args__ = (Index(None, "namespace", "group_name"), Index(None, "node_name"))


class SchedulerConfig(_Projected, Base):
    """The volcano-scheduler.conf text from the ConfigMap Volcano keeps it in (by its key)."""

    __tablename__ = "scheduler_config"
    name: Mapped[str] = mapped_column(String(253), primary_key=True)
    conf: Mapped[str] = mapped_column(Text)


class DisruptionBudget(_Projected, Base):
    """A PodDisruptionBudget (policy/v1): its selector and how many disruptions it allows now."""

    __tablename__ = "disruption_budgets"
    uid: Mapped[str] = mapped_column(String(64), primary_key=True)
    namespace: Mapped[str] = mapped_column(String(253))
    name: Mapped[str] = mapped_column(String(253))
    selector: Mapped[dict[str, Any] | None]  # spec.selector; null selects no pod
    disruptions_allowed: Mapped[int] = mapped_column(Integer, default=0)


class StorageObject(_Projected, Base):
    """A PersistentVolumeClaim, PersistentVolume or StorageClass: the fields the VolumeBinding
    filter reads (services/scheduler/core/volumes.py), keyed "Kind/namespace/name"."""

    __tablename__ = "storage_objects"
    key: Mapped[str] = mapped_column(String(520), primary_key=True)
    kind: Mapped[str] = mapped_column(String(64))
    fields: Mapped[dict[str, Any]]


class ResyncMarker(Base):
    """The newest relist marker (`KindResynced`) applied per kind: an older one, redelivered late,
    must not tombstone the rows of a newer relist."""

    __tablename__ = "resync_markers"
    kind: Mapped[str] = mapped_column(String(64), primary_key=True)
    relist_id: Mapped[str] = mapped_column(String(64))
    resource_version: Mapped[int] = mapped_column(BigInteger)


# -- written by the scheduler (cycle) ------------------------------------------------------------


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
    state: Mapped[str] = mapped_column(String(16), default="pending")
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
    __table_args__ = (
        Index("ix_decisions_pending", "kind", "pod_uid", postgresql_where=text("state = 'pending'")),
        Index(None, "gang_uid"),
    )


class GangVerdict(Base):
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


class SchedulerLeader(Base):
    """The single leadership row: whoever holds an unexpired lease may commit, with its epoch."""

    __tablename__ = "scheduler_leader"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    holder: Mapped[str] = mapped_column(String(253))
    epoch: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[datetime]


class _Outbox:
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    subject: Mapped[str] = mapped_column(Text)
    msg_id: Mapped[str] = mapped_column(String(200))
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
    published_at: Mapped[datetime | None]


class SchedulerOutbox(_Outbox, Base):
    __tablename__ = "scheduler_outbox"
    __table_args__ = (
        Index("ix_scheduler_outbox_unpublished", "id", postgresql_where=text("published_at IS NULL")),
    )


# -- written by the controller -------------------------------------------------------------------


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


metadata = Base.metadata

OWNERS: dict[str, str] = {
    "queue_share_history": "scheduler (leader)",
    "queues": "scheduler (ingest)",
    "resync_markers": "scheduler (ingest)",
    "nodes": "scheduler (ingest)",
    "disruption_budgets": "scheduler (ingest)",
    "priority_classes": "scheduler (ingest)",
    "pod_groups": "scheduler (ingest)",
    "pods": "scheduler (ingest)",
    "scheduler_config": "scheduler (ingest)",
    "storage_objects": "scheduler (ingest)",
    "decisions": "scheduler (cycle; ingest marks them confirmed)",
    "gang_verdicts": "scheduler (cycle)",
    "scheduler_leader": "scheduler (leadership)",
    "scheduler_outbox": "scheduler",
    "jobs": "controller",
    "applied_commands": "controller",
    "gang_fences": "controller",
    "job_timers": "controller",
    "controller_outbox": "controller",
}
