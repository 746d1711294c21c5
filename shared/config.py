"""Settings building blocks: every service reads its configuration once, in `__main__`, from here.

Each service declares one pydantic-settings class with its own environment prefix and embeds the
shared `NatsSettings`, `PostgresSettings` and `LogSettings`. `load_settings` turns a validation
failure into one readable line per bad setting, naming the environment variable, and exits.
"""

from __future__ import annotations

import sys
from typing import Literal, TypeVar

from pydantic import BaseModel, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict


class NatsSettings(BaseModel):
    url: str = Field(
        "nats://127.0.0.1:4222",
        description="NATS server URL (JetStream enabled); a cluster's members comma-separated "
        "(nats://a:4222,nats://b:4222,nats://c:4222), any of which may be down.",
    )
    # Credentials: a user and password (also accepted inside the URL), or a .creds file (JWT and
    # nkey). None of them is needed by a server without authorization; docs/security.md lists what
    # each service's identity must be allowed (shared/bus/permissions.py).
    user: str | None = Field(None, description="NATS user name of this service.")
    password: SecretStr | None = Field(None, description="Password of `user`.")
    creds_file: str | None = Field(None, description="A NATS .creds file (user JWT and nkey seed).")
    inbox_prefix: str | None = Field(
        None, description="Where replies arrive; unset means _INBOX.<user> when a user is given."
    )
    tls_ca_file: str | None = Field(None, description="CA bundle that signed the server's certificate.")
    tls_cert_file: str | None = Field(None, description="Client certificate, when the server asks for one.")
    tls_key_file: str | None = Field(None, description="Key of `tls_cert_file`.")
    manage_streams: bool = Field(
        True,
        description="Create or update the streams at start; off when a bootstrap identity made them "
        "and this service may only look them up.",
    )
    audit_max_age_hours: float = Field(24 * 7, gt=0, description="How long the AUDIT stream keeps events.")
    audit_max_bytes: int = Field(1 << 30, gt=0, description="Size cap of the AUDIT stream.")
    # The other streams carry facts and commands that a restart rebuilds from the Kubernetes API
    # and PostgreSQL (level-triggered), so old messages may go; a full store would stop every
    # publisher instead.
    stream_max_age_hours: float = Field(
        24, gt=0, description="How long CLUSTER, JOBS, DECISIONS and DEADLETTER keep messages."
    )
    stream_max_bytes: int = Field(1 << 30, gt=0, description="Size cap of each of those streams.")
    stream_replicas: int = Field(
        0,
        ge=0,
        le=5,
        description="Copies JetStream keeps of each stream, on different servers; 0 means one per "
        "server URL given, at most 3 (a cluster behind one address names its size here).",
    )
    max_msgs_per_object: int = Field(
        64, ge=2, description="Messages kept per object (subject), so relists cannot grow a stream."
    )

    @property
    def servers(self) -> list[str]:
        """Each server URL of `url` (one, or a cluster's members)."""
        return [part.strip() for part in self.url.split(",") if part.strip()]

    @property
    def replicas(self) -> int:
        """How many copies of each stream to ask for (`stream_replicas`, or the servers given)."""
        return self.stream_replicas or min(len(self.servers), 3)


class PostgresSettings(BaseModel):
    url: str = Field(
        "postgresql+asyncpg://phalanx@127.0.0.1:5432/phalanx",
        description="SQLAlchemy URL of the scheduling database (asyncpg driver).",
    )
    pool_size: int = Field(5, ge=1, le=100)
    # Bounds on every wait, so a dead peer is noticed: a half-open connection of a paused leader
    # must not hold the leader row (and every standby behind it) forever.
    connect_timeout_seconds: float = Field(5.0, gt=0, description="Giving up on opening a connection.")
    statement_timeout_seconds: float = Field(60.0, gt=0, description="Longest one statement may run.")
    lock_timeout_seconds: float = Field(10.0, gt=0, description="Longest a statement waits for a lock.")
    idle_in_transaction_timeout_seconds: float = Field(
        60.0, gt=0, description="The server ends a session left idle inside a transaction this long."
    )


class LogSettings(BaseModel):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    format: Literal["json", "console"] = "console"


class SettingsBase(BaseSettings):
    """Base of every component's settings: one environment prefix, nested fields with `__`, unknown
    fields refused. The simulator derives from it directly: it is the Kubernetes API, not a client of
    NATS or PostgreSQL."""

    model_config = SettingsConfigDict(env_nested_delimiter="__", extra="forbid")


class ServiceSettings(SettingsBase):
    """Base for every service's settings; nested fields use `__` (PREFIX_NATS__URL)."""

    nats: NatsSettings = NatsSettings()
    postgres: PostgresSettings = PostgresSettings()
    log: LogSettings = LogSettings()
    health_host: str = Field(
        "127.0.0.1",
        description="Address /healthz, /readyz and /metrics listen on; loopback unless a probe or a "
        "scraper must reach it from elsewhere (the charts set 0.0.0.0).",
    )


class SettingsError(SystemExit):
    """Raised (and exits the process) when a setting is invalid; the message names each one."""


S = TypeVar("S", bound=BaseSettings)


def load_settings(cls: type[S]) -> S:
    """Read `cls` from the environment, or exit with one line per invalid setting."""
    try:
        return cls()
    except ValidationError as error:
        prefix = str(cls.model_config.get("env_prefix", "")).upper()
        lines = [
            f"invalid setting {prefix}{'__'.join(str(p) for p in e['loc']).upper()}: {e['msg']}"
            f" (got {e.get('input')!r})"
            for e in error.errors()
        ]
        print("\n".join(lines), file=sys.stderr)
        raise SettingsError("\n".join(lines)) from None
