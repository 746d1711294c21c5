"""ConsoleSettings: read once in `__main__` from CONSOLE_* environment variables.

The console only reads: PostgreSQL as the `phalanx_reader` role, the Kubernetes API with a
read-only identity, and the AUDIT stream as the `auditor` NATS user. It listens on loopback unless
told otherwise, and anywhere else only with a token (docs/console.md).
"""

from __future__ import annotations

import ipaddress

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from shared.config import ServiceSettings


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses; a name or wildcard counts as beyond loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ConsoleSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="CONSOLE_", env_nested_delimiter="__", extra="forbid")

    kubeconfig: str | None = Field(None, description="Path to a kubeconfig; unset means in-cluster.")
    host: str = Field("127.0.0.1", description="Address the web console listens on (loopback by default).")
    port: int = Field(8088, ge=0, le=65535, description="Port of the web console (0: any free port).")
    token: SecretStr | None = Field(
        None,
        description="Bearer token every request must carry; required when `host` is beyond loopback.",
    )
    audit_history_hours: float = Field(
        24, gt=0, description="How far back the audit timeline is read from the AUDIT stream at start."
    )
    audit_buffer_events: int = Field(20_000, ge=100, description="Audit events kept in memory for timelines.")
    health_port: int = Field(8080, ge=0, le=65535)

    @model_validator(mode="after")
    def _token_beyond_loopback(self) -> ConsoleSettings:
        if not is_loopback(self.host) and not (self.token and self.token.get_secret_value()):
            raise ValueError(
                f"CONSOLE_TOKEN must be set when CONSOLE_HOST ({self.host}) is beyond loopback: "
                "anyone who reaches the port would read the cluster's jobs"
            )
        return self
