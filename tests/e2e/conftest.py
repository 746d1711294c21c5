"""The whole stack for end-to-end tests: `phalanx up` in a temporary folder, once for this package.

It gets NATS and PostgreSQL of its own (local processes, or the environment's servers), so the
integration tests' clean-up of streams never touches it, and it is stopped before they run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phalanx import stack as stacks

SEEDS = Path(__file__).parents[1] / "unit" / "scenario" / "seeds"


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[stacks.Stack]:
    state_dir = tmp_path_factory.mktemp("stack")
    saved = {k: os.environ.pop(k) for k in ("PHALANX_NATS_URL", "PHALANX_DATABASE_URL") if k in os.environ}
    for env, name in (
        ("PHALANX_TEST_E2E_NATS_URL", "PHALANX_NATS_URL"),
        ("PHALANX_TEST_E2E_DATABASE_URL", "PHALANX_DATABASE_URL"),
    ):
        if os.environ.get(env):
            os.environ[name] = os.environ[env]
    try:
        running = stacks.up(state_dir, durable_postgres=False)
        yield running
    finally:
        stacks.down(state_dir)
        os.environ.update(saved)


def kubectl(stack: stacks.Stack, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """kubectl against the stack's simulated cluster, as a user would run it."""
    return subprocess.run(
        ["kubectl", "--kubeconfig", stack.kubeconfig, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def audit_records(stack: stacks.Stack, event_type: str) -> list[dict[str, Any]]:
    """The audit events of `event_type` (a glob) of the last hour, as `phalanx events watch
    --json` prints them to an operator: each event's data."""
    watch = ["events", "watch", "--since", "1h", "--json", "--type", event_type, "--idle-exit", "3"]
    watched = subprocess.run(
        [sys.executable, "-m", "phalanx.cli", *watch, "--state-dir", stack.state_dir],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert watched.returncode == 0, watched.stderr
    return [json.loads(line)["data"] for line in watched.stdout.splitlines() if line.startswith("{")]
