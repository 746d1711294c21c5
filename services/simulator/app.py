"""Composition root of the simulator: one simulated cluster built from settings, served over HTTP.

`build(settings, *, timers, clock)` wires the store, the kubelets (and their nodes), the
default-scheduler stand-in, admission, the verbs, the stand-in controllers and the optional rate
limit over the ports it is given: the simulator is the Kubernetes API, so it takes no bus, store or
client, only the timers its kubelets and controllers run on (the event loop, or a test's fake) and a
clock. `run(settings)` is what `python -m services.simulator` runs; `SimulatorServer` is the same
thing in pieces, for the tests' `running_simulator` (tests/simulator_thread.py) and the benchmark,
which need the bound port and the cluster object before serving starts.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterable
from pathlib import Path

import uvicorn
import yaml

from services.simulator.admission.audit import Audit
from services.simulator.admission.disruption import DisruptionController
from services.simulator.admission.operations import Operations
from services.simulator.admission.ratelimit import TokenBucket
from services.simulator.admission.webhooks import WebhookAdmission
from services.simulator.api.http_api import ApiApp
from services.simulator.cluster import Cluster
from services.simulator.control.default_scheduler import DefaultScheduler
from services.simulator.control.kuberay import RayClusterOperator
from services.simulator.control.resource_claims import ClaimController
from services.simulator.control.standin import Planner, StandIns
from services.simulator.control.training_operator import TrainingOperator
from services.simulator.control.volumes import VolumeBinder
from services.simulator.control.workloads import (
    DeploymentController,
    ReplicaSetController,
    StatefulSetController,
)
from services.simulator.kubelets.kubelet import Kubelets, Timers
from services.simulator.kubelets.nodes import DEFAULT_NODES, NodeSpec, parse_node_entries
from services.simulator.kubelets.pod_trace import PodTrace
from services.simulator.settings import SimulatorSettings
from services.simulator.store.api_resources import BY_PATH, PODS
from services.simulator.store.store import Store
from shared.clock import Clock, SystemClock


def build(
    settings: SimulatorSettings,
    *,
    timers: Timers,
    clock: Clock,
    nodes: Iterable[NodeSpec] | None = None,
) -> Cluster:
    """One simulated cluster over the timers and clock it is given; `nodes` instead of the
    settings' node file (tests, the benchmark)."""
    now = clock.now
    store = Store(now, settings.history_size)
    kubelets = Kubelets(store, timers, now, settings.kubelet_start_delay, settings.pod_stop_seconds)
    scheduler = DefaultScheduler(store, kubelets, timers, now) if settings.default_scheduler else None
    disruptions = DisruptionController(store, now)
    admission = WebhookAdmission(store)
    limiter = TokenBucket(settings.qps, settings.burst, clock.monotonic) if settings.qps else None
    for spec in load_nodes(settings.nodes_file) if nodes is None else nodes:
        kubelets.add_node(spec)
    trace = PodTrace()
    store.subscribe(PODS, trace.record)
    store.subscribe(BY_PATH[("scheduling.volcano.sh", "v1beta1", "podgroups")], trace.record_group)
    operations = Operations(store, admission, now)
    # Kubernetes' workload controllers and the operators' stand-ins, writing through the verbs.
    planners: list[Planner] = [
        DeploymentController(),
        ReplicaSetController(),
        StatefulSetController(),
        RayClusterOperator(),
        TrainingOperator(),
    ]
    stand_ins = StandIns(store, operations, planners, now)
    # The PV controller and volume binder: claims bind to pre-created volumes.
    volumes = VolumeBinder(store, operations)
    # The resourceclaim controller: claims from templates, released when their pods end.
    claims = ClaimController(store, operations)
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
        claims,
    )


def load_nodes(path: Path | None) -> list[NodeSpec]:
    if path is None:
        return list(DEFAULT_NODES)
    return parse_node_entries(yaml.safe_load(path.read_text()))


def kubeconfig_text(url: str) -> str:
    """A kubeconfig pointing at the simulator: no TLS, no credentials, namespace default."""
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "phalanx-simulator", "cluster": {"server": url}}],
            "users": [{"name": "phalanx-simulator", "user": {"token": "simulator"}}],
            "contexts": [
                {
                    "name": "phalanx-simulator",
                    "context": {
                        "cluster": "phalanx-simulator",
                        "user": "phalanx-simulator",
                        "namespace": "default",
                    },
                }
            ],
            "current-context": "phalanx-simulator",
            "preferences": {},
        },
        sort_keys=False,
    )


class SimulatorServer:
    def __init__(self, settings: SimulatorSettings, nodes: list[NodeSpec] | None = None) -> None:
        self.settings = settings
        self._nodes = nodes
        self._server: uvicorn.Server | None = None
        self._socket: socket.socket | None = None
        self.cluster: Cluster | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://{self.settings.host}:{self.port}"

    def start(self) -> Cluster:
        """Bind the port, build the cluster on the running loop, write the kubeconfig."""
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit it: without it Nagle holds each response's last segment
        # for the client's delayed ACK, ~40 ms per keep-alive request (kube-apiserver sets it too).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((self.settings.host, self.settings.port))
        # Listening now, not when uvicorn starts, lets clients connect as soon as it is announced.
        sock.listen(4096)
        self._socket, self.port = sock, sock.getsockname()[1]
        self.cluster = build(self.settings, timers=loop, clock=SystemClock(), nodes=self._nodes)
        config = uvicorn.Config(
            ApiApp(self.cluster),
            log_level=self.settings.log_level,
            lifespan="off",
            access_log=False,
            proxy_headers=False,
            http="httptools",
            timeout_keep_alive=60,
            backlog=4096,
        )
        self._server = uvicorn.Server(config)
        if self.settings.kubeconfig is not None:
            write_kubeconfig(self.settings.kubeconfig, self.url)
        return self.cluster

    async def run(self) -> None:
        if self._server is None:
            self.start()
        assert self._server is not None
        assert self._socket is not None
        assert self.cluster is not None
        try:
            await self._server.serve(sockets=[self._socket])
        finally:
            await self.cluster.admission.close()

    @property
    def started(self) -> bool:
        return bool(self._server and self._server.started)

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True


def write_kubeconfig(path: Path, url: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(kubeconfig_text(url))


async def run(settings: SimulatorSettings, announce: Callable[[str], None] | None = None) -> None:
    """Serve until SIGINT/SIGTERM (uvicorn handles both); `announce` gets the URL once bound."""
    server = SimulatorServer(settings)
    server.start()
    if announce is not None:
        announce(server.url)
    await server.run()
