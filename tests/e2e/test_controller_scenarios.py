"""The controller's Job lifecycle on the real stack: one scenario per behaviour, run through the simulator.

Each file in tests/e2e/scenarios/controller shows one part of what the controller shell does with the pure
core's answers (policies, commands, plugins, queue commands, PodGroups for plain pods), as a user sees it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx import stack as stacks
from phalanx.scenario import ExternalStack, run_files

pytestmark = pytest.mark.e2e

SCENARIOS = Path(__file__).parent / "scenarios" / "controller"

# Scenarios that show a known bug outside the controller shell; strict, so a fix makes them fail loudly.
KNOWN_BUGS: dict[str, str] = {}


def _cases() -> list[object]:
    return [
        pytest.param(
            path,
            id=path.stem,
            marks=[pytest.mark.xfail(reason=KNOWN_BUGS[path.stem], strict=True)]
            if path.stem in KNOWN_BUGS
            else [],
        )
        for path in sorted(SCENARIOS.glob("*.yaml"))
    ]


@pytest.mark.parametrize("scenario", _cases())
def test_controller_scenario_passes(stack: stacks.Stack, scenario: Path) -> None:
    lines: list[str] = []
    report = run_files([scenario], ExternalStack(Path(stack.state_dir)), emit=lines.append)
    assert report.failed == 0, "\n".join(lines)
    assert report.passed > 0
