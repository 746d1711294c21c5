"""Find or start the NATS and PostgreSQL servers a command or a test run needs.

In order: a server named by the environment (PHALANX_NATS_URL, PHALANX_DATABASE_URL), else
containers through testcontainers where a Docker engine answers, else local processes
(shared.infra.local). Each `provide_*` returns the URL and a function that stops what it started;
a NATS server started here admits only the identities of shared.bus.permissions.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from shared.infra import local, nats_auth, nats_cluster, passwords
from shared.storage import roles

NATS_ENV = "PHALANX_NATS_URL"
POSTGRES_ENV = "PHALANX_DATABASE_URL"


@dataclass(frozen=True)
class Provided:
    url: str
    how: str  # "environment" | "container" | "local process"
    stop: Callable[[], None]
    server: local.LocalServer | None = None
    # role -> (user, password) on a server we started, whose identities we provisioned (NATS:
    # shared.bus.permissions; PostgreSQL: shared.storage.roles). Empty for a server from the
    # environment or a container: its authorization is not ours to know.
    credentials: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Every server we started (a NATS cluster has several; `server` is the first of them).
    servers: tuple[local.LocalServer, ...] = ()

    def url_as(self, role: str) -> str:
        """The URL with `role`'s credentials in it, or the given URL when we know none.

        A cluster's URL is the comma-separated list of its members', each given the credentials.
        """
        if role not in self.credentials:
            return self.url
        user, password = self.credentials[role]
        return ",".join(passwords.with_user(url, user, password) for url in self.url.split(","))


def _nothing() -> None:
    return None


def docker_available() -> bool:
    """True when a Docker engine answers and testcontainers (the `local` extra) is installed."""
    if importlib.util.find_spec("testcontainers") is None:
        return False
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


def provide_nats(state_dir: Path, *, env: str = NATS_ENV, size: int = 1) -> Provided:
    """`size` > 1 asks for a cluster: started here as local processes (never a container), unless
    the environment names one (a comma-separated list of its members' URLs)."""
    if os.environ.get(env):
        return Provided(os.environ[env], "environment", _nothing)
    if size > 1:
        members = nats_cluster.start_nats_cluster(state_dir, size)
        credentials = {role: (role, secret) for role, secret in nats_auth.passwords_for(state_dir).items()}
        url = ",".join(member.url for member in members)
        return Provided(
            url, "local process", lambda: local.stop_all(members), members[0], credentials, tuple(members)
        )
    if docker_available():
        from testcontainers.community.nats import NatsContainer

        container = NatsContainer("nats:2.10").with_command("-js")
        container.start()
        return Provided(container.nats_uri(), "container", container.stop)
    server = local.start_nats(state_dir)
    credentials = {role: (role, password) for role, password in nats_auth.passwords_for(state_dir).items()}
    return Provided(server.url, "local process", lambda: local.stop(server), server, credentials, (server,))


def provide_postgres(state_dir: Path, *, env: str = POSTGRES_ENV, durable: bool = True) -> Provided:
    if os.environ.get(env):
        return Provided(os.environ[env], "environment", _nothing)
    if docker_available():
        from testcontainers.community.postgres import PostgresContainer

        container = PostgresContainer("postgres:16", driver="asyncpg")
        container.start()
        return Provided(container.get_connection_url(), "container", container.stop)
    server = local.start_postgres(state_dir, durable=durable)
    credentials = local_postgres_roles(server.url, state_dir)
    return Provided(server.url, "local process", lambda: local.stop(server), server, credentials, (server,))


def local_postgres_roles(superuser_url: str, state_dir: Path) -> dict[str, tuple[str, str]]:
    """Provision the service roles on a server we started; role -> (database user, password)."""
    secrets = local.postgres_passwords(state_dir)
    roles.provision_blocking(superuser_url, secrets)
    return {role: (roles.role_name(role), secrets[role]) for role in roles.ROLES}
