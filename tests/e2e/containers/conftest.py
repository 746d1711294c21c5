"""Fixtures of the container tier: a Docker engine, the stand-in base images, the image built.

What the tier measured (stand-ins, build times, the image's size over its base, the stack's start)
is printed at the end of the run under "container tier", whether its tests passed or not.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.e2e.containers import stand_ins
from tests.e2e.containers.engine import Engine, NoEngine, docker_engine

FIGURES: list[str] = []
SECTION = "container tier"
IMAGE = "phalanx:tier"  # PHALANX_IMAGE for compose; never the user's phalanx:dev


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if FIGURES:
        terminalreporter.section(SECTION)
        for figure in FIGURES:
            terminalreporter.write_line(figure)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In an xdist worker, hand the figures to the controller, which prints them (tests/conftest.py)."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None and FIGURES:
        output.setdefault("summaries", {})[SECTION] = list(FIGURES)


@pytest.fixture(scope="package")
def engine() -> Iterator[Engine]:
    """A Docker engine; skipped, saying why, only where none answers and none can be started."""
    started = time.monotonic()
    context = docker_engine()
    try:
        running = context.__enter__()
    except NoEngine as why:
        pytest.skip(f"no Docker engine can be started here: {why}")
    how = "started for this run" if running.started_here else "already running"
    FIGURES.append(f"Docker engine {how} ({running.host}) in {time.monotonic() - started:.0f} s")
    try:
        yield running
    finally:
        context.__exit__(None, None, None)


@pytest.fixture(scope="package")
def base_images(engine: Engine) -> Engine:
    """Every base image the Dockerfile and compose name, as stand-ins made from Debian's packages."""
    try:
        stand_ins.provide(engine, FIGURES)
    except NoEngine as why:
        pytest.skip(f"the stand-in base images cannot be made here: {why}")
    return engine
