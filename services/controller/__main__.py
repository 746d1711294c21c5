"""`python -m services.controller`: read settings, configure logging, run until stopped."""

from __future__ import annotations

from services.controller import app
from services.controller.settings import ControllerSettings
from shared.config import load_settings
from shared.logs import configure_logging
from shared.runtime import run_service


def main() -> None:
    settings = load_settings(ControllerSettings)
    configure_logging(settings.log, service="controller")
    run_service(
        "controller",
        settings.health_port,
        lambda health: app.run(settings, health),
        health_host=settings.health_host,
    )


if __name__ == "__main__":
    main()
