"""Scheduler behaviours beyond the seeds, as scenarios through the real stack.

Each file in tests/e2e/scenarios/scheduler shows one behaviour — preemption, reclaim, a closed queue,
cordoned or NotReady nodes, nodeSelector, taints, the Unschedulable condition — with the watcher,
admission, controller and scheduler running over NATS and PostgreSQL against the simulator.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx import stack as stacks
from phalanx.scenario import ExternalStack, run_files

pytestmark = pytest.mark.e2e

SCENARIOS = Path(__file__).parent / "scenarios" / "scheduler"

# Scenarios that fail every time because of a known bug outside the scheduler.
KNOWN_BUGS: dict[str, str] = {}


def _case(path: Path) -> object:
    reason = KNOWN_BUGS.get(path.stem)
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(path, id=path.stem, marks=marks)


@pytest.mark.parametrize("scenario", [_case(p) for p in sorted(SCENARIOS.glob("*.yaml"))])
def test_scheduler_scenario_passes(stack: stacks.Stack, scenario: Path) -> None:
    lines: list[str] = []
    report = run_files([scenario], ExternalStack(Path(stack.state_dir)), emit=lines.append)
    assert report.failed == 0, "\n".join(lines)
    assert report.passed > 0
