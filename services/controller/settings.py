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
    # Replicas (docs/scaling.md): each one a distinct `replica` number, all the same `shards`.
    replica: int = Field(
        0,
        ge=0,
        lt=16,
        description="This replica's number (0 to 15, a StatefulSet's ordinal): names its own durable "
        "consumers and, with the host, its shard-lease identity.",
    )
    shards: int = Field(
        16, ge=1, le=1024, description="Shards of the job-key space; the same for every replica."
    )
    shard_lease_seconds: float = Field(
        6.0, gt=1, description="Shard lease; a dead replica's shards move to the others after it."
    )
    holder: str = Field("", description="Shard-lease identity; empty means '<host>/controller-<replica>'.")
