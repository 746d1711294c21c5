"""AdmissionSettings: read once in `__main__` from ADMISSION_* environment variables."""

from __future__ import annotations

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from shared.config import ServiceSettings


class AdmissionSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="ADMISSION_", env_nested_delimiter="__", extra="forbid")

    kubeconfig: str | None = Field(None, description="Path to a kubeconfig; unset means in-cluster.")
    host: str = Field(
        "127.0.0.1",
        description="Address the HTTPS webhook server listens on; the API server must reach it "
        "(the chart and docker compose set 0.0.0.0).",
    )
    port: int = Field(8443, ge=1, le=65535, description="HTTPS webhook port.")
    cert_dir: str = Field(
        ".phalanx/admission-certs", description="Where generated or supplied TLS files live."
    )
    cert_file: str | None = Field(None, description="A supplied serving certificate (PEM); else generated.")
    key_file: str | None = Field(None, description="The supplied certificate's key (PEM).")
    ca_file: str | None = Field(None, description="The CA that signed the supplied certificate (PEM).")
    cert_validity_seconds: float = Field(
        90 * 86400, gt=0, description="Lifetime of a generated serving certificate (default 90 days)."
    )
    ca_validity_seconds: float = Field(
        365 * 86400, gt=0, description="Lifetime of a generated CA (default 365 days)."
    )
    cert_renew_before_seconds: float = Field(
        30 * 86400,
        gt=0,
        description="Renew a generated certificate when less than this is left (default 30 days); "
        "a new CA is trusted twice this long before its CA expires.",
    )
    cert_check_seconds: float = Field(
        30, gt=0, description="How often supplied certificate files are looked at for changes."
    )
    cert_secret: str | None = Field(
        None,
        description="A Secret the replicas keep their one generated CA and serving certificate in "
        "(created by the first replica, renewed by whichever finds it due); unset: each keeps its "
        "own in cert_dir, which suits one replica only.",
    )
    cert_secret_namespace: str | None = Field(
        None, description="Namespace of cert_secret; unset means service_namespace."
    )
    reuse_port: bool = Field(
        False,
        description="Listen with SO_REUSEPORT, so replicas on one host share the webhook's port "
        "and the kernel spreads the API server's connections over them (phalanx up --scale).",
    )
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
    keep_alive_seconds: int = Field(
        120,
        ge=1,
        description="How long an idle keep-alive connection stays open; longer than the API "
        "server keeps one (90 s), so the server never closes one the client is about to reuse.",
    )
    scheduler_name: str = Field("volcano", description="schedulerName given to Jobs that name none.")
    max_request_bytes: int = Field(3 * 1024 * 1024, gt=0, description="Larger AdmissionReviews are refused.")
    health_port: int = Field(8080, ge=0, le=65535)

    @model_validator(mode="after")
    def _renewal_fits(self) -> AdmissionSettings:
        if self.cert_renew_before_seconds >= self.cert_validity_seconds:
            raise ValueError(
                "ADMISSION_CERT_RENEW_BEFORE_SECONDS must be below ADMISSION_CERT_VALIDITY_SECONDS"
            )
        if self.ca_validity_seconds <= 2 * self.cert_renew_before_seconds:
            raise ValueError(
                "ADMISSION_CA_VALIDITY_SECONDS must be above twice ADMISSION_CERT_RENEW_BEFORE_SECONDS"
            )
        return self
