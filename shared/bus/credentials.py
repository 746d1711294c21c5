"""How a service (or the CLI) identifies itself to NATS: the keyword arguments of `nats.connect`.

Used by `Bus.connect` and by the CLI's direct connections (`phalanx events watch`). The user comes
from the settings or from the URL (`nats://user:password@host:4222`); the inbox prefix follows the
user, because each identity may subscribe to its own inbox only (shared/bus/permissions.py).
"""

from __future__ import annotations

import ssl
from typing import Any
from urllib.parse import unquote, urlsplit

from shared.bus.permissions import inbox_prefix
from shared.config import NatsSettings


def user_of(settings: NatsSettings) -> str | None:
    if settings.user:
        return settings.user
    username = urlsplit(settings.servers[0]).username if settings.servers else None
    return unquote(username) if username else None


def tls_context(settings: NatsSettings) -> ssl.SSLContext | None:
    """A client context trusting `tls_ca_file` (TLS 1.2 at least), or None to let the URL decide."""
    if not settings.tls_ca_file:
        return None
    context = ssl.create_default_context(cafile=settings.tls_ca_file)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if settings.tls_cert_file and settings.tls_key_file:
        context.load_cert_chain(settings.tls_cert_file, settings.tls_key_file)
    return context


def connect_options(settings: NatsSettings) -> dict[str, Any]:
    """`nats.connect` keyword arguments (servers included) for `settings`."""
    options: dict[str, Any] = {"servers": settings.servers}
    if settings.user:
        options["user"] = settings.user
    if settings.password is not None:
        options["password"] = settings.password.get_secret_value()
    if settings.creds_file:
        options["user_credentials"] = settings.creds_file
    user = user_of(settings)
    if settings.inbox_prefix or user:
        options["inbox_prefix"] = settings.inbox_prefix or inbox_prefix(user or "")
    context = tls_context(settings)
    if context is not None:
        options["tls"] = context
    return options
