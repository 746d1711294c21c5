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
