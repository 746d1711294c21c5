"""The scheduling database schema: SQLAlchemy 2.0 models, the Alembic target metadata.

The models live in one module per writer (`ingest`, `scheduler`, `controller`, `watcher`; what
they share in `base`); every one is importable from here as `tables.X`, and `OWNERS` stays whole.

One service writes each table (see `OWNERS` and migrations/README.md). The scheduler's ingester
projects cluster objects into `queues`, `nodes`, `priority_classes`, `pod_groups`, `pods`,
`disruption_budgets`, `storage_objects`, `device_objects` and `hyper_nodes`; its cycle writes
`decisions`,
`gang_verdicts` and its outbox under a fenced leadership row. The controller keeps job lifecycle
records, applied commands and its own outbox. Resource amounts are JSON maps of integer
milli-units (see shared.domain.resources).
"""

from __future__ import annotations

from shared.storage.tables.base import CHANGE_SEQUENCE, NAMING, Base, _Outbox, _Projected
from shared.storage.tables.controller import (
    AppliedCommand,
    ControllerMember,
    ControllerOutbox,
    ControllerShard,
    GangFence,
    JobRecord,
    JobTimer,
)
from shared.storage.tables.ingest import (
    DeviceObject,
    DisruptionBudget,
    HyperNode,
    Node,
    Pod,
    PodGroup,
    PriorityClass,
    Queue,
    ResyncMarker,
    SchedulerConfig,
    StorageObject,
)
from shared.storage.tables.scheduler import (
    Decision,
    GangVerdictRow,
    QueueShareSample,
    QueueUsageRow,
    RuntimeRecord,
    SchedulerLeader,
    SchedulerOutbox,
)
from shared.storage.tables.watcher import WatcherLease

metadata = Base.metadata

OWNERS: dict[str, str] = {
    "queue_share_history": "scheduler (leader)",
    "runtime_records": "scheduler (leader)",
    "queue_usage": "scheduler (leader)",
    "queues": "scheduler (ingest)",
    "resync_markers": "scheduler (ingest)",
    "nodes": "scheduler (ingest)",
    "disruption_budgets": "scheduler (ingest)",
    "priority_classes": "scheduler (ingest)",
    "pod_groups": "scheduler (ingest)",
    "pods": "scheduler (ingest)",
    "scheduler_config": "scheduler (ingest)",
    "storage_objects": "scheduler (ingest)",
    "device_objects": "scheduler (ingest)",
    "hyper_nodes": "scheduler (ingest)",
    "decisions": "scheduler (cycle; ingest marks them confirmed)",
    "gang_verdicts": "scheduler (cycle)",
    "scheduler_leader": "scheduler (leadership)",
    "scheduler_outbox": "scheduler",
    "jobs": "controller",
    "applied_commands": "controller",
    "gang_fences": "controller",
    "job_timers": "controller",
    "controller_outbox": "controller",
    "controller_shards": "controller (shard leases)",
    "controller_members": "controller (shard leases)",
    "watcher_leases": "watcher (kind leases)",
}

__all__ = [
    "CHANGE_SEQUENCE",
    "NAMING",
    "OWNERS",
    "AppliedCommand",
    "Base",
    "ControllerMember",
    "ControllerOutbox",
    "ControllerShard",
    "Decision",
    "DeviceObject",
    "DisruptionBudget",
    "GangFence",
    "GangVerdictRow",
    "HyperNode",
    "JobRecord",
    "JobTimer",
    "Node",
    "Pod",
    "PodGroup",
    "PriorityClass",
    "Queue",
    "QueueShareSample",
    "QueueUsageRow",
    "ResyncMarker",
    "RuntimeRecord",
    "SchedulerConfig",
    "SchedulerLeader",
    "SchedulerOutbox",
    "StorageObject",
    "WatcherLease",
    "_Outbox",
    "_Projected",
    "metadata",
]
