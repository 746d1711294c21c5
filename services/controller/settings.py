"""ControllerSettings: read once in `__main__` from CONTROLLER_* environment variables."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from shared.config import ServiceSettings


class ControllerSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="CONTROLLER_", env_nested_delimiter="__", extra="forbid")

    kubeconfig: str | None = Field(None, description="Path to a kubeconfig; unset means in-cluster.")
    scheduler_names: list[str] = Field(["volcano"], description="Pods with these schedulerNames are ours.")
    resync_seconds: float = Field(
        30.0, gt=0, description="How often every job is re-synced (level-triggered)."
    )
    health_port: int = Field(8080, ge=0, le=65535)
