"""Accelerators and DRA claims through the real stack (#26 items 3 and 4): the scenarios in
tests/e2e/scenarios/devices run against the package's stack (simulator, watcher, admission,
controller, scheduler over NATS and PostgreSQL), and `phalanx job why` names a claim that can
never be allocated for the job the first scenario leaves waiting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from phalanx import stack as stacks
from phalanx.scenario import ExternalStack, run_files
from tests.e2e.conftest import audit_records

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

SCENARIOS = Path(__file__).parent / "scenarios" / "devices"
CLAIMS = SCENARIOS / "01-dra-claims-from-templates.yaml"


def _run(stack: stacks.Stack, scenario: Path) -> None:
    lines: list[str] = []
    report = run_files([scenario], ExternalStack(Path(stack.state_dir)), emit=lines.append)
    assert report.failed == 0, "\n".join(lines)
    assert report.passed > 0


def test_a_gang_gets_its_claims_allocated_together_and_a_hopeless_claim_says_why(stack: stacks.Stack) -> None:
    _run(stack, CLAIMS)
    why = subprocess.run(
        [
            sys.executable,
            "-m",
            "phalanx.cli",
            "job",
            "why",
            "greedy",
            "--state-dir",
            str(stack.state_dir),
            "--kubeconfig",
            str(stack.kubeconfig),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert why.returncode == 0, why.stderr
    assert "can never be allocated" in why.stdout
    assert "waiting will not help" in why.stdout
    # The audit stream says which devices each pod of the gang was given.
    placed = [r for r in audit_records(stack, "scheduler.placed") if r["name"].startswith("trainer-")]
    given = placed[-1]["details"]["devices"]
    assert sorted(given) == ["trainer-worker-0", "trainer-worker-1"]
    assert all("gpu.example.com/node-a/gpu-" in entry for entries in given.values() for entry in entries)


@pytest.mark.parametrize(
    "scenario", [pytest.param(p, id=p.stem) for p in sorted(SCENARIOS.glob("*.yaml")) if p != CLAIMS]
)
def test_device_scenario_passes(stack: stacks.Stack, scenario: Path) -> None:
    _run(stack, scenario)
