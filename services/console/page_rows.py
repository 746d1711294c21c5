"""Pure: the plain rows the console's pages show, and the sums over them.

The read model (read_model.py) fills them from PostgreSQL, the cluster reader (cluster.py) from the
Kubernetes API; pages.py renders them. Resource amounts are the scheduler's milli-units (cpu 1000 =
one core, memory 1000 = one byte), as the ingester stores them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


def add_into(total: dict[str, int], amounts: dict[str, Any] | None) -> None:
    for name, amount in (amounts or {}).items():
        total[name] = total.get(name, 0) + int(amount)


@dataclass
class QueueSummary:
    """One queue's row on the console: its settings, what it holds and its gangs by state."""

    name: str
    parent: str | None
    weight: int
    state: str
    capability: dict[str, int]
    deserved: dict[str, int]
    guarantee: dict[str, int]
    allocated: dict[str, int] = field(default_factory=dict)
    pending_gangs: int = 0
    running_gangs: int = 0


def roll_up(queues: dict[str, QueueSummary]) -> list[QueueSummary]:
    """A parent queue holds what its children hold (Volcano's hierarchy): add each up the chain."""
    own = {name: (dict(q.allocated), q.pending_gangs, q.running_gangs) for name, q in queues.items()}
    for name, (allocated, pending, running) in own.items():
        seen = {name}
        parent = queues[name].parent
        while parent in queues and parent not in seen:  # a cycle in bad data stops here
            seen.add(parent)
            ancestor = queues[parent]
            add_into(ancestor.allocated, allocated)
            ancestor.pending_gangs += pending
            ancestor.running_gangs += running
            parent = ancestor.parent
    return list(queues.values())


@dataclass
class JobRow:
    uid: str
    namespace: str
    name: str
    phase: str
    queue: str
    min_member: int
    created_at: datetime | None
    updated_at: datetime | None
    podgroup: str


@dataclass
class PodRow:
    name: str
    task: str | None
    phase: str
    node: str | None


@dataclass
class Verdict:
    reason: str
    condition_reason: str
    message: str
    updated_at: datetime | None


@dataclass
class JobDetail:
    job: JobRow
    podgroup_uid: str | None
    podgroup_phase: str | None
    pods: list[PodRow]
    verdict: Verdict | None


@dataclass
class NodeView:
    name: str
    allocatable: dict[str, int]
    used: dict[str, int]
    cordoned: bool
    ready: bool

    def load(self) -> float:
        """The fullest resource's share in use (0..1), the cell's heat."""
        shares = [
            self.used.get(k, 0) / v for k, v in self.allocatable.items() if v and k in ("cpu", "memory")
        ]
        return min(1.0, max(shares, default=0.0))


@dataclass
class TaskRow:
    """One task of a Job as its page lists it (read from the Job's spec.tasks)."""

    name: str
    replicas: int
    min_available: int | None


@dataclass
class Condition:
    type: str
    status: str
    reason: str
    message: str
    time: str
