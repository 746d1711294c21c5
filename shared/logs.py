"""Structured logging for every service: structlog over the standard library, JSON or console.

Called once from each service's `__main__`; modules get loggers with `structlog.get_logger()`.
"""

from __future__ import annotations

import logging
import sys

import structlog

from shared.config import LogSettings


def configure_logging(settings: LogSettings, *, service: str) -> None:
    level = getattr(logging, settings.level)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if settings.format == "json"
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    structlog.contextvars.bind_contextvars(service=service)
    logging.basicConfig(level=max(level, logging.WARNING), stream=sys.stderr)
