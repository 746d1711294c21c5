"""`python -m services.watcher`: read settings, configure logging, run until stopped."""

from __future__ import annotations

from services.watcher import app
from services.watcher.settings import WatcherSettings
from shared.config import load_settings
from shared.logs import configure_logging
from shared.runtime import run_service


def main() -> None:
    settings = load_settings(WatcherSettings)
    configure_logging(settings.log, service="watcher")
    run_service(
        "watcher",
        settings.health_port,
        lambda health: app.run(settings, health),
        health_host=settings.health_host,
    )


if __name__ == "__main__":
    main()
