"""The seeds' experiments as scenarios, through the real stack: NATS, PostgreSQL, the simulator."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx import stack as stacks
from phalanx.scenario import ExternalStack, run_files
from tests.e2e.conftest import SEEDS

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("seed", sorted(SEEDS.glob("*.yaml")), ids=lambda p: p.stem)
def test_seed_scenario_passes(stack: stacks.Stack, seed: Path) -> None:
    lines: list[str] = []
    report = run_files([seed], ExternalStack(Path(stack.state_dir)), emit=lines.append)
    assert report.failed == 0, "\n".join(lines)
    assert report.passed > 0
