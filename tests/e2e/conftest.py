"""The whole stack for end-to-end tests: `phalanx up` in a temporary folder, once for this package.

It gets NATS and PostgreSQL of its own (local processes, or the environment's servers), so the
integration tests' clean-up of streams never touches it, and it is stopped before they run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phalanx import scale as scales
from phalanx import stack as stacks
from tests.waiting import eventually

SEEDS = Path(__file__).parents[1] / "unit" / "scenario" / "seeds"

# The package stack's scale, as `phalanx up --scale` takes it, comma-separated: e.g.
# "controller=3,watcher=2,scheduler=2,admission=2,nats=3" runs the suite on a scaled stack
# (docs/scaling.md, "The suite on a scaled stack"). Unset or empty: one of each.
SCALE_ENV = "PHALANX_TEST_SCALE"


def requested_scale() -> dict[str, int]:
    """The scale the package stack starts with, read from `PHALANX_TEST_SCALE`; a bad value stops
    the run with the variable's name and the rule broken, rather than testing an unscaled stack."""
    raw = os.environ.get(SCALE_ENV, "")
    try:
        return scales.parse(part.strip() for part in raw.split(",") if part.strip())
    except scales.ScaleError as error:
        raise pytest.UsageError(f"{SCALE_ENV}={raw!r}: {error}") from error


def up_own_stack(state_dir: Path, **options: Any) -> stacks.Stack:
    """`phalanx up` for the package stack, and for a file that starts a stack of its own (it kills
    NATS, or needs a stack no other module touched, or services configured otherwise), at the
    scale `PHALANX_TEST_SCALE` asks for: so every end-to-end file runs scaled when the suite does.
    `options` are `phalanx.stack.up`'s (a nodes file, the simulator's arguments, ...)."""
    return stacks.up(state_dir, durable_postgres=False, scale=requested_scale(), **options)


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
        running = up_own_stack(state_dir)
        yield running
    finally:
        stacks.down(state_dir)
        os.environ.update(saved)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failed test on a stack reports what the cluster and the services last said: in CI the
    stack's folder is gone by the time anyone reads the failure."""
    report = yield
    if report.failed and call.when == "call":
        funcargs = getattr(item, "funcargs", {})
        for running in (value for value in funcargs.values() if isinstance(value, stacks.Stack)):
            report.sections.append(("stack state at the failure", stack_state(running)))
    return report


def stack_state(stack: stacks.Stack, *, lines_per_log: int = 12, width: int = 240) -> str:
    """Volcano's objects and the pods as kubectl lists them, and the last lines of every log."""
    parts: list[str] = []
    if shutil.which("kubectl"):
        try:
            listed = kubectl(stack, "get", "vcjob,podgroups,pods", "-A", "-o", "wide")
            parts.append((listed.stdout or listed.stderr)[-6000:])
        except subprocess.TimeoutExpired:
            parts.append("kubectl get: no answer within 60 s")
    for process in stack.processes:
        log_path = Path(process.log_path)
        tail = log_path.read_text(errors="replace").splitlines()[-lines_per_log:] if log_path.exists() else []
        parts.append(f"== {process.name} ({log_path.name})")
        parts.extend(line[:width] for line in tail)
    return "\n".join(parts)


SCHEDULER_CONFIGMAP = ("volcano-system", "volcano-scheduler-configmap")


@pytest.fixture(scope="module", autouse=True)
def default_scheduler_configuration_after_each_module(request: pytest.FixtureRequest) -> Iterator[None]:
    """A module that gave the package stack's scheduler a configuration of its own (a scenario's
    ConfigMap) leaves it on the default one: the next module on the same stack (and worker) counts
    on Volcano's default plugins, proportion's deserved shares among them.

    The stack is asked for before the module runs, so it is torn down after this: a module with a
    `stack` of its own (test_vcctl.py) stops its stack when the module ends, and asked for after,
    it would be gone."""
    uses_a_stack = "stack" in request.fixturenames or _module_uses_the_package_stack(request)
    running: object = request.getfixturevalue("stack") if uses_a_stack else None
    yield
    if not isinstance(running, stacks.Stack):  # none, or another kind of stack (the compose tier's)
        return
    namespace, name = SCHEDULER_CONFIGMAP
    if kubectl(running, "get", "configmap", name, "-n", namespace).returncode != 0:
        return
    logs = ServiceLogs(running, "scheduler")
    kubectl(running, "delete", "configmap", name, "-n", namespace, "--ignore-not-found")
    eventually(
        lambda: any("scheduler configuration loaded" in line for line in logs.new_lines()),
        "the scheduler back on its default configuration",
    )


def _module_uses_the_package_stack(request: pytest.FixtureRequest) -> bool:
    module = request.node
    return any(
        "stack" in getattr(item, "fixturenames", ())
        for item in request.session.items
        if item.nodeid.startswith(module.nodeid)
    )


@pytest.fixture
def own_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    """NATS and PostgreSQL of the test's own stack, never the environment's: the test restarts or
    kills them (the chaos runs)."""
    monkeypatch.delenv("PHALANX_NATS_URL", raising=False)
    monkeypatch.delenv("PHALANX_DATABASE_URL", raising=False)


def kubectl(stack: stacks.Stack, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """kubectl against the stack's simulated cluster, as a user would run it."""
    return subprocess.run(
        ["kubectl", "--kubeconfig", stack.kubeconfig, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def job_phase(
    stack: stacks.Stack, name: str, phases: tuple[str, ...], *, namespace: str = "default", within: float = 60
) -> str:
    """Wait, as a user watching `kubectl get vcjob` would, until the Job's phase is one of `phases`."""

    def current() -> str | None:
        got = kubectl(stack, "get", "vcjob", name, "-n", namespace, "-o", "jsonpath={.status.state.phase}")
        return got.stdout if got.stdout in phases else None

    phase = eventually(current, f"vcjob {namespace}/{name} in phase {' or '.join(phases)}", within=within)
    assert phase is not None
    return phase


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


class ServiceLogs:
    """The logs of every replica of one service (`scheduler.log`, `scheduler-2.log`, ...), from the
    moment this is made: on a scaled stack, a line is in the log of whichever replica did the work
    (for the scheduler, the one leading), so a test reads them all."""

    def __init__(self, stack: stacks.Stack, service: str) -> None:
        self.paths = [Path(process.log_path) for process in stack.replicas(service)]
        self.seen = {path: len(path.read_text().splitlines()) for path in self.paths}

    def new_lines(self) -> list[str]:
        """What the replicas logged since this was made."""
        return [line for path in self.paths for line in path.read_text().splitlines()[self.seen[path] :]]

    def text(self) -> str:
        """Everything the replicas logged, this object's start or not."""
        return "\n".join(path.read_text() for path in self.paths)
