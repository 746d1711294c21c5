"""Find or start the NATS and PostgreSQL servers a command or a test run needs.

In order: a server named by the environment (PHALANX_NATS_URL, PHALANX_DATABASE_URL), else
containers through testcontainers where a Docker engine answers, else local processes
(shared.infra.local). Each `provide_*` returns the URL and a function that stops what it started.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from shared.infra import local

NATS_ENV = "PHALANX_NATS_URL"
POSTGRES_ENV = "PHALANX_DATABASE_URL"


@dataclass(frozen=True)
class Provided:
    url: str
    how: str  # "environment" | "container" | "local process"
    stop: Callable[[], None]
    server: local.LocalServer | None = None


def _nothing() -> None:
    return None


def docker_available() -> bool:
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if host.startswith("unix://"):
        path = host.removeprefix("unix://")
        if not os.path.exists(path):
            return False
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(1)
            sock.connect(path)
            sock.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
            return b"OK" in sock.recv(256)
        return False
    return True  # a TCP Docker host: let testcontainers try it


def provide_nats(state_dir: Path, *, env: str = NATS_ENV) -> Provided:
    if os.environ.get(env):
        return Provided(os.environ[env], "environment", _nothing)
    if docker_available():
        from testcontainers.community.nats import NatsContainer

        container = NatsContainer("nats:2.10").with_command("-js")
        container.start()
        return Provided(container.nats_uri(), "container", container.stop)
    server = local.start_nats(state_dir)
    return Provided(server.url, "local process", lambda: local.stop(server), server)


def provide_postgres(state_dir: Path, *, env: str = POSTGRES_ENV) -> Provided:
    if os.environ.get(env):
        return Provided(os.environ[env], "environment", _nothing)
    if docker_available():
        from testcontainers.community.postgres import PostgresContainer

        container = PostgresContainer("postgres:16", driver="asyncpg")
        container.start()
        return Provided(container.get_connection_url(), "container", container.stop)
    server = local.start_postgres(state_dir)
    return Provided(server.url, "local process", lambda: local.stop(server), server)
