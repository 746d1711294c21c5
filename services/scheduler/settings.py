"""SchedulerSettings: read once in `__main__` from SCHEDULER_* environment variables."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from services.scheduler.leadership import default_holder
from shared.config import ServiceSettings


class SchedulerSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="SCHEDULER_", env_nested_delimiter="__", extra="forbid")

    cycle_period_seconds: float = Field(1.0, gt=0, le=60, description="Time between cycles.")
    min_cycle_gap_seconds: float = Field(
        0.5, ge=0, le=60, description="Least time from one cycle's start to the next, however often kicked."
    )
    lease_seconds: float = Field(10.0, gt=1, description="Leadership lease; a standby takes over after.")
    decision_ttl_seconds: float = Field(
        30.0,
        gt=0,
        description="How long an unconfirmed decision keeps its resources booked (longer while "
        "ingest lags the cluster).",
    )
    decision_window_seconds: float | None = Field(
        None,
        gt=0,
        description="How long after its commit the controller may carry a decision out; "
        "half of decision_ttl_seconds unless set, and always shorter.",
    )
    decision_begun_ttl_seconds: float | None = Field(
        None,
        gt=0,
        description="How long the unconfirmed binds of a gang whose decision has begun (one of its "
        "binds confirmed) keep their resources booked; ten times decision_ttl_seconds unless set, "
        "and never less.",
    )
    decision_backlog_floor: int = Field(
        256,
        ge=0,
        description="Up to this many decisions waiting for the controller never hold new ones back; "
        "above it, cycles pause while the controller would reach a new decision later than half "
        "its window (0: never hold back).",
    )
    scheduler_names: list[str] = Field(["volcano"], description="Pods with these schedulerNames are ours.")
    conf_file: str | None = Field(
        None, description="A volcano-scheduler.conf to use instead of the ConfigMap (reloaded on change)."
    )
    holder: str = Field(default_factory=default_holder, description="This replica's leadership name.")
    ingest: bool = Field(True, description="Run the ingester (cluster.* → tables) in this process.")
    cycle: bool = Field(True, description="Run the scheduling cycle in this process.")
    share_history_seconds: float = Field(
        60.0, ge=1, le=3600, description="How often the leader samples each queue's share for the console."
    )
    share_history_hours: float = Field(
        24.0, gt=0, le=24 * 31, description="How long queue share samples are kept."
    )
    health_port: int = Field(8080, ge=0, le=65535)
