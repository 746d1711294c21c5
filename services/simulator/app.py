"""Serving the simulated cluster: the uvicorn server around the ASGI app, and its kubeconfig.

`serve(settings)` is what `python -m services.simulator` runs; `SimulatorServer` is the same
thing in pieces, for `testing.running_simulator` and the benchmark, which need the bound port
and the cluster object before serving starts. The kubelets' timers run on the server's loop.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from pathlib import Path

import uvicorn
import yaml

from services.simulator.cluster import Cluster, build_cluster
from services.simulator.http_api import ApiApp
from services.simulator.nodes import NodeSpec
from services.simulator.settings import SimulatorSettings


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
        self.cluster = build_cluster(self.settings, loop, nodes=self._nodes)
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


async def serve(settings: SimulatorSettings, announce: Callable[[str], None] | None = None) -> None:
    """Serve until SIGINT/SIGTERM (uvicorn handles both); `announce` gets the URL once bound."""
    server = SimulatorServer(settings)
    server.start()
    if announce is not None:
        announce(server.url)
    await server.run()
