"""`python -m services.scheduler`: read settings, configure logging, run until stopped."""

from __future__ import annotations

from services.scheduler import app
from services.scheduler.settings import SchedulerSettings
from shared.config import load_settings
from shared.logs import configure_logging
from shared.runtime import run_service


def main() -> None:
    settings = load_settings(SchedulerSettings)
    configure_logging(settings.log, service="scheduler")
    run_service(
        "scheduler",
        settings.health_port,
        lambda health: app.run(settings, health),
        health_host=settings.health_host,
    )


if __name__ == "__main__":
    main()
