"""`python -m services.admission`: read settings, configure logging, run until stopped."""

from __future__ import annotations

from services.admission import app
from services.admission.settings import AdmissionSettings
from shared.config import load_settings
from shared.logs import configure_logging
from shared.runtime import run_service


def main() -> None:
    settings = load_settings(AdmissionSettings)
    configure_logging(settings.log, service="admission")
    run_service(
        "admission",
        settings.health_port,
        lambda health: app.run(settings, health),
        health_host=settings.health_host,
    )


if __name__ == "__main__":
    main()
