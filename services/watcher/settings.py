"""WatcherSettings: read once in `__main__` from WATCHER_* environment variables."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from shared.config import ServiceSettings


class WatcherSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="WATCHER_", env_nested_delimiter="__", extra="forbid")

    kubeconfig: str | None = Field(None, description="Path to a kubeconfig; unset means in-cluster.")
    scheduler_names: list[str] = Field(["volcano"], description="Pods with these schedulerNames are ours.")
    watch_timeout_seconds: int = Field(300, ge=10, description="Server-side watch timeout; then re-watch.")
    health_port: int = Field(8080, ge=0, le=65535)
    # Replicas (docs/scaling.md): one publishes each kind, the others stand by for it.
    replica: int = Field(0, ge=0, description="This replica's number; with the host, its lease identity.")
    lease_seconds: float = Field(
        6.0, gt=1, description="Kind lease; a standby takes a dead replica's kinds over after it."
    )
    holder: str = Field("", description="Kind-lease identity; empty means '<host>/watcher-<replica>'.")
