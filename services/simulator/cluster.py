"""The composition root: one simulated cluster wired from settings, a clock and timers.

`build_cluster` creates the store, the kubelets (and their nodes), the default-scheduler
stand-in, admission, the verbs and the optional rate limit. The HTTP app and the control API
hold the returned `Cluster`; tests build one with fake timers and drive it without HTTP.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

from services.simulator.admission import Admission
from services.simulator.audit import Audit
from services.simulator.default_scheduler import DefaultScheduler
from services.simulator.disruption import DisruptionController
from services.simulator.kinds import BY_PATH, PODS
from services.simulator.kubelet import Kubelets, Timers
from services.simulator.kuberay import RayClusterOperator
from services.simulator.nodes import DEFAULT_NODES, NodeSpec, parse_node_entries
from services.simulator.operations import Operations
from services.simulator.pod_trace import PodTrace
from services.simulator.ratelimit import TokenBucket
from services.simulator.settings import SimulatorSettings
from services.simulator.standin import Planner, StandIns
from services.simulator.store import Store
from services.simulator.training_operator import TrainingOperator
from services.simulator.volumes import VolumeBinder
from services.simulator.workloads import DeploymentController, ReplicaSetController, StatefulSetController


@dataclass
class Cluster:
    settings: SimulatorSettings
    store: Store
    kubelets: Kubelets
    admission: Admission
    operations: Operations
    limiter: TokenBucket | None
    scheduler: DefaultScheduler | None
    audit: Audit
    trace: PodTrace
    disruptions: DisruptionController
    stand_ins: StandIns
    volumes: VolumeBinder


def load_nodes(path: Path | None) -> list[NodeSpec]:
    if path is None:
        return list(DEFAULT_NODES)
    return parse_node_entries(yaml.safe_load(path.read_text()))


def utc_now() -> datetime:
    return datetime.now(UTC)


def build_cluster(
    settings: SimulatorSettings,
    timers: Timers,
    *,
    clock: Callable[[], datetime] = utc_now,
    monotonic: Callable[[], float] = time.monotonic,
    nodes: Iterable[NodeSpec] | None = None,
) -> Cluster:
    store = Store(clock, settings.history_size)
    kubelets = Kubelets(store, timers, clock, settings.kubelet_start_delay, settings.pod_stop_seconds)
    scheduler = DefaultScheduler(store, kubelets, timers, clock) if settings.default_scheduler else None
    disruptions = DisruptionController(store, clock)
    admission = Admission(store)
    limiter = TokenBucket(settings.qps, settings.burst, monotonic) if settings.qps else None
    for spec in load_nodes(settings.nodes_file) if nodes is None else nodes:
        kubelets.add_node(spec)
    trace = PodTrace()
    store.subscribe(PODS, trace.record)
    store.subscribe(BY_PATH[("scheduling.volcano.sh", "v1beta1", "podgroups")], trace.record_group)
    operations = Operations(store, admission, clock)
    # Kubernetes' workload controllers and the operators' stand-ins, writing through the verbs.
    planners: list[Planner] = [
        DeploymentController(),
        ReplicaSetController(),
        StatefulSetController(),
        RayClusterOperator(),
        TrainingOperator(),
    ]
    stand_ins = StandIns(store, operations, planners, clock)
    # The PV controller and volume binder: claims bind to pre-created volumes.
    volumes = VolumeBinder(store, operations)
    return Cluster(
        settings,
        store,
        kubelets,
        admission,
        operations,
        limiter,
        scheduler,
        Audit(),
        trace,
        disruptions,
        stand_ins,
        volumes,
    )
