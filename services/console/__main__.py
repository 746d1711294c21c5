"""`python -m services.console`: read settings, configure logging, serve until stopped."""

from __future__ import annotations

from services.console import app
from services.console.settings import ConsoleSettings
from shared.config import load_settings
from shared.logs import configure_logging
from shared.runtime import run_service


def main() -> None:
    settings = load_settings(ConsoleSettings)
    configure_logging(settings.log, service="console")
    run_service(
        "console",
        settings.health_port,
        lambda health: app.run(settings, health),
        health_host=settings.health_host,
    )


if __name__ == "__main__":
    main()
