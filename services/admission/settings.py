"""AdmissionSettings: read once in `__main__` from ADMISSION_* environment variables."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from shared.config import ServiceSettings


class AdmissionSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="ADMISSION_", env_nested_delimiter="__", extra="forbid")

    kubeconfig: str | None = Field(None, description="Path to a kubeconfig; unset means in-cluster.")
    host: str = Field("0.0.0.0", description="Address the HTTPS webhook server listens on.")
    port: int = Field(8443, ge=1, le=65535, description="HTTPS webhook port.")
    cert_dir: str = Field(
        ".phalanx/admission-certs", description="Where generated or supplied TLS files live."
    )
    cert_file: str | None = Field(None, description="A supplied serving certificate (PEM); else generated.")
    key_file: str | None = Field(None, description="The supplied certificate's key (PEM).")
    ca_file: str | None = Field(None, description="The CA that signed the supplied certificate (PEM).")
    webhook_url: str | None = Field(
        None,
        description="Base URL the API server calls (e.g. https://127.0.0.1:8443); else a Service reference.",
    )
    service_name: str = Field(
        "phalanx-admission", description="The Service in front of this webhook, in-cluster."
    )
    service_namespace: str = Field("volcano-system")
    register_webhooks: bool = Field(True, description="Create/update the webhook configurations at start.")
    timeout_seconds: int = Field(10, ge=1, le=30, description="The API server's webhook call timeout.")
    scheduler_name: str = Field("volcano", description="schedulerName given to Jobs that name none.")
    max_request_bytes: int = Field(3 * 1024 * 1024, gt=0, description="Larger AdmissionReviews are refused.")
    health_port: int = Field(8080, ge=0, le=65535)
