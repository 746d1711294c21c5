"""Passwords of the identities of locally started servers, and URLs that carry them.

Kept in the state folder, readable by its owner only, created once and reused, so that a server
that outlives the command (`phalanx infra up`) and the services started later agree.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit


def stored(path: Path, names: Iterable[str]) -> dict[str, str]:
    """A password for each of `names`, read from `path` or created there (mode 0600)."""
    wanted = list(names)
    existing: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
    if all(name in existing for name in wanted):
        return existing
    # URL-safe characters only: the passwords go into URLs and SQL literals unescaped.
    created = {**{name: secrets.token_urlsafe(24) for name in wanted}, **existing}
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        json.dump(created, file, indent=2)
    return created


def with_user(url: str, user: str, password: str) -> str:
    """`url` with `user:password@` in it (both nats-py and SQLAlchemy read credentials from it)."""
    parts = urlsplit(url)
    netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{parts.netloc.rsplit('@', 1)[-1]}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def without_user(url: str) -> str:
    """`url` with no credentials; each of a NATS cluster's comma-separated URLs likewise."""
    if "," in url:
        return ",".join(without_user(part) for part in url.split(","))
    parts = urlsplit(url)
    return urlunsplit(
        (parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, parts.query, parts.fragment)
    )
