"""The scheduler core's input: one consistent, immutable picture of the cluster for one cycle.

The scheduler shell reads PostgreSQL into these frozen dataclasses and hands them to
`plan_cycle`; nothing here is mutated afterwards. Used resources on a node are *derived* by the
core: the requests of gang tasks whose status holds a node (Bound, Running, Releasing) plus
`Snapshot.other_pods` (pods that are not ours). "Bound" includes decisions made but not yet
confirmed, so they count as allocated and nothing is booked twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from services.scheduler.core.devices import ClaimNeed, DeviceRef
from services.scheduler.core.snapshot_topology import HyperNodeInfo, SubGroupConstraint, TopologyConstraint
from services.scheduler.core.volumes import VolumeNeed
from shared.domain.resources import ZERO, Resources

EMPTY: Mapping[str, str] = {}
HostPort = tuple[str, str, int]  # (hostIP, protocol, hostPort) of a container port

# Task statuses, spelled as Volcano's TaskStatus.String() so that messages match.
PENDING = "Pending"
PIPELINED = "Pipelined"
ALLOCATED = "Allocated"
BOUND = "Bound"
RUNNING = "Running"
RELEASING = "Releasing"
SUCCEEDED = "Succeeded"
FAILED = "Failed"

# Statuses whose task occupies a node's resources in the snapshot.
OCCUPYING_STATUSES = frozenset({BOUND, RUNNING, RELEASING})


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """A node as the scheduler sees it; NotReady nodes are left out of cycles, as in Volcano."""

    name: str
    allocatable: Resources
    labels: Mapping[str, str] = field(default_factory=dict)
    # Kubernetes taints: {"key": ..., "value": ..., "effect": "NoSchedule"|"PreferNoSchedule"|...}
    taints: tuple[Mapping[str, str], ...] = ()
    unschedulable: bool = False
    ready: bool = True


@dataclass(frozen=True, slots=True)
class QueueUsage:
    """Decayed usage at `at` (fairshare): queue -> resource -> share of the cluster x seconds."""

    at: datetime
    usage: Mapping[str, Mapping[str, float]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class QueueInfo:
    """A Volcano Queue; `parent` builds the hierarchy (None means a child of `root`)."""

    name: str
    weight: int = 1
    capability: Resources | None = None
    guarantee: Resources = ZERO
    deserved: Resources | None = None
    reclaimable: bool = True
    state: str = "Open"  # "Open" | "Closed" | "Closing"
    parent: str | None = None
    priority: int = 0
    # Queue annotations; hierarchical drf reads volcano.sh/hierarchy and -weights from them.
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TaskInfo:
    """One pod of a gang. `task_role` is the Volcano task name (annotation volcano.sh/task-spec)."""

    uid: str
    namespace: str
    name: str
    request: Resources
    task_role: str = ""
    node: str | None = None
    status: str = PENDING  # Pending|Bound|Running|Succeeded|Failed|Releasing
    priority: int = 0
    node_selector: Mapping[str, str] = field(default_factory=dict)
    # The pod's raw `spec.affinity`: {"nodeAffinity": ..., "podAntiAffinity": ...}
    affinity: Mapping[str, Any] | None = None
    tolerations: tuple[Mapping[str, Any], ...] = ()
    preemptable: bool = True
    labels: Mapping[str, str] = field(default_factory=dict)
    priority_class_name: str = ""
    preemption_policy: str = "PreemptLowerPriority"  # or "Never"
    # The node a previous cycle's preemption or pipelining reserved for this pending task.
    nominated_node: str | None = None
    # spec.schedulingGates is not empty: the pod waits, unplaced and uncounted, until they go.
    scheduling_gated: bool = False
    # The host ports its containers ask for, as (hostIP, protocol, port); hostIP "" is any.
    host_ports: tuple[HostPort, ...] = ()
    # The pod's raw spec.topologySpreadConstraints.
    spread_constraints: tuple[Mapping[str, Any], ...] = ()
    # Releasing only because an eviction decided earlier is still pending: the pod is not yet
    # terminating, so PodDisruptionBudget statuses do not count it yet (the pdb plugin does).
    eviction_pending: bool = False
    # What its PersistentVolumeClaims ask of a node (core/volumes.py), resolved by the shell.
    volume_needs: tuple[VolumeNeed, ...] = ()
    # Its DRA ResourceClaims (core/devices.py), resolved by the shell: what a node must offer.
    device_claims: tuple[ClaimNeed, ...] = ()
    # When its containers started (status.startTime) and its spec.activeDeadlineSeconds: the
    # reservation planner's inputs for when the gang's nodes free up (core/estimates.py).
    started: datetime | None = None
    active_deadline_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class GangInfo:
    """A PodGroup and its tasks. `phase` is the PodGroup phase ("" is treated as Pending)."""

    uid: str
    namespace: str
    name: str
    queue: str
    min_member: int
    created: datetime
    tasks: tuple[TaskInfo, ...] = ()
    min_task_member: Mapping[str, int] = field(default_factory=dict)
    min_resources: Resources | None = None
    priority: int = 0
    phase: str = "Pending"  # Pending|Inqueue|Running|Unknown|Completed
    # PodGroup annotation volcano.sh/sla-waiting-time, overriding the sla plugin's argument.
    sla_waiting_time: timedelta | None = None
    # Since when the gang has held resources with fewer members than its minimum; kept by the shell
    # from `CyclePlan.underfilled` and used only by the optional release rule.
    below_min_since: datetime | None = None
    # PodGroup annotations (a Volcano Job's are copied onto its PodGroup); task-topology reads them.
    annotations: Mapping[str, str] = field(default_factory=dict)
    # spec.networkTopology and spec.subGroupPolicy (hypernodes.py, actions/domain_search.py)
    network_topology: TopologyConstraint | None = None
    sub_groups: tuple[SubGroupConstraint, ...] = ()


@dataclass(frozen=True, slots=True)
class OtherPod:
    """A pod that is not ours but occupies a node (daemonsets, other schedulers' pods)."""

    node: str
    request: Resources
    namespace: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    host_ports: tuple[HostPort, ...] = ()
    # Its required pod anti-affinity terms: a pod placed by another scheduler keeps ours away too.
    anti_affinity: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    """A PodDisruptionBudget (policy/v1): the pods of `namespace` its label selector covers
    (None selects none, an empty selector all) may lose `disruptions_allowed` more, no more."""

    namespace: str
    name: str
    selector: Mapping[str, Any] | None
    disruptions_allowed: int


@dataclass(frozen=True, slots=True)
class SettledGangs:
    """The settled gangs of a snapshot (by uid) and their footprints summed (core/settled.py)."""

    uids: frozenset[str] = frozenset()
    occupied: Mapping[str, Resources] = field(default_factory=dict)  # node name -> held
    alloc: Mapping[str, Resources] = field(default_factory=dict)  # queue name -> sums
    request: Mapping[str, Resources] = field(default_factory=dict)
    elastic: Mapping[str, Resources] = field(default_factory=dict)
    inqueue: Mapping[str, Resources] = field(default_factory=dict)
    queues: frozenset[str] = frozenset()  # queues with at least one settled gang
    names: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything one cycle may look at; `now` is the cycle's clock (the core reads no clock)."""

    nodes: tuple[NodeInfo, ...]
    queues: tuple[QueueInfo, ...]
    gangs: tuple[GangInfo, ...]
    now: datetime
    priority_classes: Mapping[str, int] = field(default_factory=dict)
    other_pods: tuple[OtherPod, ...] = ()
    budgets: tuple[DisruptionBudget, ...] = ()
    # DRA devices allocated to claims, or promised by pending decisions: no other claim takes them.
    devices_taken: frozenset[DeviceRef] = frozenset()
    hyper_nodes: tuple[HyperNodeInfo, ...] = ()
    # Finished runtimes in seconds, oldest first, per "queue/job-class" (core/estimates.py).
    runtime_history: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    # Each queue's decayed usage as last persisted (fairshare plugin, core/fairshare.py).
    queue_usage: QueueUsage | None = None
    # preemptioncost's budgets: pods evicted in the budget window, (victim queue, when), oldest first.
    recent_evictions: tuple[tuple[str, datetime], ...] = ()
    # The gangs with nothing to place or release, summed (core/settled.py): set by the shell so
    # that a cycle of the default actions walks only the others. None: every gang is walked.
    settled: SettledGangs | None = None
    # PodGroups made for one plain pod that exists but does not name its group yet (the pod's
    # annotation follows the group's creation): not enqueued before it joins, so the gang is
    # admitted and placed in one cycle and one decision (snapshot_parts.unjoined).
    unjoined: frozenset[str] = frozenset()
