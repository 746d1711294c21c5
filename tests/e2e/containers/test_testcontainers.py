"""Integration tests once more, with NATS and PostgreSQL from testcontainers on the tier's engine.

The fixtures of tests/conftest.py take containers when a Docker engine answers (shared.infra.
provision); here they do, with the stand-in `nats:2.10` and `postgres:16`, Ryuk off (its image is
not to be had), and the containers' ports reached on 127.0.0.1. Runs after test_containers.py has
taken its compose stack down.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.containers.conftest import FIGURES
from tests.e2e.containers.engine import Engine

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

REPO = Path(__file__).parents[3]

# The bus and the schema against servers in containers: the whole integration suite runs in CI
# against local processes; this proves the testcontainers path itself, within the tier's budget.
TESTCONTAINERS_SUBSET = ("tests/integration/foundation", "tests/integration/controller")


def test_integration_tests_pass_with_servers_from_testcontainers(base_images: Engine) -> None:
    since = base_images.docker("system", "info", "-f", "{{.SystemTime}}").stdout.strip()
    env = {
        key: value
        for key, value in base_images.env.items()
        if key
        not in (
            "PHALANX_TEST_NATS_URL",
            "PHALANX_TEST_DATABASE_URL",
            "PHALANX_NATS_URL",
            "PHALANX_DATABASE_URL",
        )
    }
    env["TESTCONTAINERS_RYUK_DISABLED"] = "true"
    # Published ports on 127.0.0.1 (the engine binds there). Else testcontainers, taking this
    # machine for a container, would go by the bridge's gateway address.
    env["TESTCONTAINERS_CONNECTION_MODE"] = "docker_host"
    env["TESTCONTAINERS_HOST_OVERRIDE"] = "127.0.0.1"
    started = time.monotonic()
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *TESTCONTAINERS_SUBSET],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stdout[-5000:] + ran.stderr[-3000:]
    FIGURES.append(
        f"integration tests through testcontainers ({ran.stdout.strip().splitlines()[-1]}) "
        f"in {time.monotonic() - started:.0f} s"
    )
    # The servers really came from the engine, as the stand-ins the tests name.
    now = base_images.docker("system", "info", "-f", "{{.SystemTime}}").stdout.strip()
    started_images = base_images.docker(
        "events", "--since", since, "--until", now, "--filter", "event=start", "--format", "{{.From}}"
    ).stdout.split()
    assert {"nats:2.10", "postgres:16"} <= set(started_images), started_images
