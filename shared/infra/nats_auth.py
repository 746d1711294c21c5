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


def passwords_for(state_dir: Path) -> dict[str, str]:
    """Every role's password for the NATS server of `state_dir`, created once and kept."""
    return passwords.stored(state_dir / USERS_FILE, permissions.ROLES)


if __name__ == "__main__":
    sys.stdout.write(render())
