"""A NATS cluster of local processes on loopback: `phalanx up --scale nats=3` and the tests.

Each member is a `local.start_nats` server with a `cluster` block (nats_auth.render_cluster):
the same users on every server, routes on loopback with a password of their own. Streams are
replicated across the members by the bootstrap (NatsSettings.stream_replicas), and clients are
given every member's URL, so losing one server loses neither a message nor a connection for long.
"""

from __future__ import annotations

import contextlib
import time
import urllib.request
from pathlib import Path

from shared.infra import nats_auth, passwords
from shared.infra.local import LocalServer, free_port, start_nats, stop_all

ROUTE_PASSWORD_FILE = "nats-route.json"


def nats_member_names(size: int) -> list[str]:
    """`nats`, `nats-2`, `nats-3`, ...: the first keeps a lone server's name and files."""
    return ["nats", *(f"nats-{index}" for index in range(2, size + 1))]


def start_nats_cluster(state_dir: Path, size: int) -> list[LocalServer]:
    """`size` JetStream servers on loopback joined by routes into one cluster.

    All of them admit the same identities (one users file), and the routes need a password of
    their own (`<state_dir>/nats-route.json`). JetStream elects its meta leader once a majority
    has met, so the servers start together rather than one waiting for the next.
    """
    if size == 1:
        return [start_nats(state_dir)]
    route_password = passwords.stored(state_dir / ROUTE_PASSWORD_FILE, ["route"])["route"]
    names = nats_member_names(size)
    route_ports = tuple(free_port() for _ in names)
    monitor_ports = [free_port() for _ in names]
    servers = []
    try:
        for name, route_port, monitor_port in zip(names, route_ports, monitor_ports, strict=True):
            member = nats_auth.ClusterMember(name, route_port, route_ports, route_password, monitor_port)
            servers.append(start_nats(state_dir, name=name, cluster=member))
        for server, monitor_port in zip(servers, monitor_ports, strict=True):
            _wait_until_current(server, monitor_port)
    except BaseException:
        stop_all(servers)
        raise
    return servers


def _wait_until_current(server: LocalServer, monitor_port: int, timeout: float = 60.0) -> None:
    """Until the member's /healthz says its JetStream has met the meta leader: a stream asked
    for before that would wait for an answer nobody gives yet."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"http://127.0.0.1:{monitor_port}/healthz", timeout=1) as response,
        ):
            if response.status == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(
        f"NATS cluster member {server.name} not current within {timeout:.0f} s; see {server.log_path}"
    )
