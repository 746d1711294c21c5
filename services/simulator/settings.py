"""The simulator's settings: command-line flags and `SIMULATOR_*` environment variables.

Parsed once by `__main__` (or built directly by tests and the benchmark) and passed down to
`app.run`. Every field is documented here; invalid values fail at start, not mid-run.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from shared.config import SettingsBase


class SimulatorSettings(SettingsBase):
    model_config = SettingsConfigDict(env_prefix="SIMULATOR_", env_nested_delimiter="__", extra="forbid")

    host: str = Field("127.0.0.1", description="Address to listen on.")
    port: int = Field(8080, ge=0, le=65535, description="Port to listen on; 0 picks a free one.")
    kubeconfig: Path | None = Field(None, description="Where to write a kubeconfig for clients.")
    nodes_file: Path | None = Field(
        None,
        description="YAML list of nodes (the scenario format's cluster.nodes entries); "
        "without it: node-0..node-3 with 8 CPU, 32Gi, 110 pods.",
    )
    qps: float | None = Field(None, gt=0, description="Write rate limit, requests per second.")
    burst: int = Field(10, ge=1, description="Writes allowed at once above the rate limit.")
    kubelet_start_delay: float = Field(0.05, ge=0, description="Seconds from a pod's binding to it Running.")
    pod_stop_seconds: float = Field(
        1.0,
        ge=0,
        description="Seconds a deleted pod's containers take to exit after SIGTERM (never longer "
        "than its grace period); the annotation simulator.phalanx/stop-seconds overrides it per pod.",
    )
    default_scheduler: bool = Field(
        True,
        description="Bind pods of schedulerName default-scheduler (a kube-scheduler stand-in).",
    )
    history_size: int = Field(
        50_000, ge=100, description="Watch events kept per resource type; older versions get 410."
    )
    bookmark_interval: float = Field(
        10.0, gt=0, description="Seconds between BOOKMARK events on watches that allow them."
    )
    log_level: str = Field("warning", description="uvicorn's log level.")
