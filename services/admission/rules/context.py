"""The plain data admission rules need beyond the object itself, loaded by the webhook shell.

The shell fills an `AdmissionContext` from PostgreSQL or the cluster (queues, priority classes,
jobs per queue, namespace annotations) before calling the pure rules; the rules never look
anything up themselves. Defaults mirror Volcano's webhook-manager flags.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.domain.quantity import parse_quantity
from shared.volcano import ROOT_QUEUE, Queue, queue_access
from shared.volcano.keys import HIERARCHY

# Volcano's registered job plugins (pkg/controllers/job/plugins/factory.go).
VOLCANO_JOB_PLUGINS: frozenset[str] = frozenset(
    {"ssh", "env", "svc", "tensorflow", "mpi", "pytorch", "hcclrank", "ray"}
)
# Kubernetes creates these two classes itself; they always exist.
BUILTIN_PRIORITY_CLASSES: frozenset[str] = frozenset({"system-cluster-critical", "system-node-critical"})
# etcd's default request limit; a larger object could never be stored anyway.
DEFAULT_MAX_OBJECT_BYTES = 1_572_864

ResourceAmounts = Mapping[str, str | int | float]


@dataclass(frozen=True)
class QueueAdmissionFacts:
    """What the rules read of a queue: state, place in the hierarchy, resource settings."""

    name: str
    state: str = "Open"
    parent: str = ""
    capability: ResourceAmounts = field(default_factory=dict)
    deserved: ResourceAmounts = field(default_factory=dict)
    guarantee: ResourceAmounts = field(default_factory=dict)
    hierarchy: str = ""
    allocated_pods: int = 0
    # The namespaces that may submit to it; None when open to all (shared.volcano.queue_access).
    allowed_namespaces: frozenset[str] | None = None

    @classmethod
    def from_queue(cls, queue: Queue | Mapping[str, Any]) -> QueueAdmissionFacts:
        """The view of a Queue object (or its Kubernetes JSON) as stored in the cluster."""
        model = queue if isinstance(queue, Queue) else Queue.model_validate(queue)
        spec, status = model.spec, model.status
        allocated = (status.allocated or {}).get("pods", 0)
        annotations = model.metadata.annotations or {}
        return cls(
            name=model.name,
            state=str(status.state or ""),
            parent=spec.parent or "",
            capability=dict(spec.capability or {}),
            deserved=dict(spec.deserved or {}),
            guarantee=dict((spec.guarantee.resource if spec.guarantee else None) or {}),
            hierarchy=annotations.get(HIERARCHY, ""),
            allocated_pods=int(parse_quantity(allocated)),
            allowed_namespaces=queue_access.allowed_namespaces(annotations),
        )


@dataclass(frozen=True)
class AdmissionContext:
    """Everything outside the reviewed object that a rule may consult."""

    queues: Mapping[str, QueueAdmissionFacts] = field(default_factory=dict)
    priority_classes: frozenset[str] = frozenset()
    jobs_per_queue: Mapping[str, int] = field(default_factory=dict)
    known_plugins: frozenset[str] = VOLCANO_JOB_PLUGINS
    # Namespace -> its `scheduling.volcano.sh/queue-name` annotation (PodGroup defaulting).
    namespace_queues: Mapping[str, str] = field(default_factory=dict)
    scheduler_name: str = "volcano"
    max_queue_depth: int = 5
    max_object_bytes: int = DEFAULT_MAX_OBJECT_BYTES
    enable_root_queue_protection: bool = True
    enable_queue_allocated_pods_check: bool = True

    @classmethod
    def from_cluster(cls, queues: Iterable[Queue | Mapping[str, Any]], **settings: Any) -> AdmissionContext:
        """A context from the cluster's Queue objects (models or JSON) plus other settings."""
        views = [QueueAdmissionFacts.from_queue(queue) for queue in queues]
        return cls(queues={view.name: view for view in views}, **settings)

    def children(self, queue: str) -> list[QueueAdmissionFacts]:
        """Direct child queues; a queue without a parent hangs under `root`."""
        return sorted(
            (
                view
                for view in self.queues.values()
                if view.name != queue
                and (view.parent or (ROOT_QUEUE if view.name != ROOT_QUEUE else "")) == queue
            ),
            key=lambda view: view.name,
        )

    def is_leaf(self, queue: str) -> bool:
        return not self.children(queue)

    def priority_class_exists(self, name: str) -> bool:
        return name in self.priority_classes or name in BUILTIN_PRIORITY_CLASSES
