"""Tables the scheduler's ingester writes: cluster objects projected into rows (OWNERS says which)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Index,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from shared.storage.tables.base import Base, _Projected


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
    # {"networkTopology": ..., "subGroupPolicy": [...]} as the PodGroup's spec has them (0011)
    topology: Mapped[dict[str, Any] | None]
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


class DeviceObject(_Projected, Base):
    """A DeviceClass, ResourceClaim or ResourceSlice (DRA): the fields the device allocator reads
    (services/scheduler/device_rows.py), keyed "Kind/namespace/name"."""

    __tablename__ = "device_objects"
    key: Mapped[str] = mapped_column(String(520), primary_key=True)
    kind: Mapped[str] = mapped_column(String(64))
    fields: Mapped[dict[str, Any]]


class HyperNode(_Projected, Base):
    """A HyperNode (topology.volcano.sh/v1alpha1): a network domain and its members (0011)."""

    __tablename__ = "hyper_nodes"
    name: Mapped[str] = mapped_column(String(253), primary_key=True)
    tier: Mapped[int] = mapped_column(Integer, default=0)
    tier_name: Mapped[str] = mapped_column(String(253), default="")
    members: Mapped[dict[str, Any]]  # {"items": spec.members}


class ResyncMarker(Base):
    """The newest relist marker (`KindResynced`) applied per kind: an older one, redelivered late,
    must not tombstone the rows of a newer relist."""

    __tablename__ = "resync_markers"
    kind: Mapped[str] = mapped_column(String(64), primary_key=True)
    relist_id: Mapped[str] = mapped_column(String(64))
    resource_version: Mapped[int] = mapped_column(BigInteger)
