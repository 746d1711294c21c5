"""NATS server configuration that enforces `shared.bus.permissions`: users, passwords, TLS.

`local.start_nats` writes it for the servers Phalanx starts itself, with random passwords kept in
the state folder (readable by its owner only); `deploy/nats/nats.conf` is the same text rendered
with environment-variable references instead of passwords, for docker compose and real clusters
(`python -m shared.infra.nats_auth > deploy/nats/nats.conf`; a unit test keeps the two in step).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from shared.bus import permissions
from shared.infra import passwords

USERS_FILE = "nats-users.json"


@dataclass(frozen=True)
class ClusterMember:
    """One server of a NATS cluster on loopback: its name, its route port and every member's.

    Routes authenticate with a password of their own (`route_user`), so the cluster port admits
    no client identity and no client password opens a route.
    """

    server_name: str
    route_port: int
    route_ports: tuple[int, ...]
    route_password: str
    monitor_port: int = 0  # /healthz answers 200 once this member's JetStream is current
    cluster_name: str = "phalanx"
    route_user: str = "route"


@dataclass(frozen=True)
class ServerTls:
    cert_file: str
    key_file: str


def password_variable(role: str) -> str:
    """The environment variable a rendered configuration reads `role`'s password from."""
    return f"NATS_{role.upper()}_PASSWORD"


def render(secrets: Mapping[str, str] | None = None, *, tls: ServerTls | None = None) -> str:
    """The `authorization` (and optional `tls`) blocks of a nats-server configuration.

    With `secrets`, each user's password is written in; without, each is read from the server's
    environment (`$NATS_<ROLE>_PASSWORD`), which nats-server resolves when it loads the file.
    """
    lines = [
        "# Generated from shared/bus/permissions.py; do not edit by hand.",
        "authorization {",
        "  users = [",
    ]
    for role in permissions.ROLES:
        granted = permissions.grant(role)
        secret = json.dumps(secrets[role]) if secrets is not None else f"${password_variable(role)}"
        lines += [
            "    {",
            f"      user: {json.dumps(role)}",
            f"      password: {secret}",
            "      permissions: {",
            f"        publish: {{ allow: {json.dumps(list(granted.publish))} }}",
            f"        subscribe: {{ allow: {json.dumps(list(granted.subscribe))} }}",
            "      }",
            "    }",
        ]
    lines += ["  ]", "}"]
    # nats-server accepts nothing older than TLS 1.2.
    if tls is not None:
        lines += [
            "tls {",
            f"  cert_file: {json.dumps(tls.cert_file)}",
            f"  key_file: {json.dumps(tls.key_file)}",
            "}",
        ]
    return "\n".join(lines) + "\n"


def render_cluster(member: ClusterMember) -> str:
    """The `server_name` and `cluster` blocks that make one server a member of a routed cluster.

    Every member gets the same `authorization` block (render), so an identity is the same on
    each server and a client may connect to any of them.
    """
    credentials = f"{member.route_user}:{member.route_password}"
    routes = [f"nats-route://{credentials}@127.0.0.1:{port}" for port in member.route_ports]
    return (
        "\n".join(
            [
                f"server_name: {json.dumps(member.server_name)}",
                *([f'http: "127.0.0.1:{member.monitor_port}"'] if member.monitor_port else []),
                "cluster {",
                f"  name: {json.dumps(member.cluster_name)}",
                f'  listen: "127.0.0.1:{member.route_port}"',
                "  authorization {",
                f"    user: {json.dumps(member.route_user)}",
                f"    password: {json.dumps(member.route_password)}",
                "  }",
                f"  routes: {json.dumps(routes)}",
                "}",
            ]
        )
        + "\n"
    )


def passwords_for(state_dir: Path) -> dict[str, str]:
    """Every role's password for the NATS server of `state_dir`, created once and kept."""
    return passwords.stored(state_dir / USERS_FILE, permissions.ROLES)


if __name__ == "__main__":
    sys.stdout.write(render())
