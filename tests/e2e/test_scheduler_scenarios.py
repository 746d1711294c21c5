"""Scheduler behaviours beyond the seeds, as scenarios through the real stack.

Each file in tests/e2e/scenarios/scheduler shows one behaviour — preemption, reclaim, a closed queue,
cordoned or NotReady nodes, nodeSelector, taints, the Unschedulable condition, the optional release
of a gang stuck below its minimum — with the watcher, admission, controller and scheduler running
over NATS and PostgreSQL against the simulator. The scenario in scenarios/scheduler/live-conf
changes the scheduler's ConfigMap while the stack runs; its test also reads what the scheduler
recorded about the bad configuration.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx import stack as stacks
from phalanx.scenario import ExternalStack, run_files
from tests.e2e.conftest import ServiceLogs, audit_records

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


def test_configuration_change_is_followed_and_a_bad_one_is_refused_on_record(stack: stacks.Stack) -> None:
    lines: list[str] = []
    scenario = SCENARIOS / "live-conf" / "configuration-reloaded.yaml"
    report = run_files([scenario], ExternalStack(Path(stack.state_dir)), emit=lines.append)
    assert report.failed == 0, "\n".join(lines)

    # The refusal is on the audit stream, naming the unknown action, as `phalanx events watch`
    # shows it to an operator ...
    records = audit_records(stack, "scheduler.configuration-*")
    rejected = [r for r in records if r["action"] == "configuration-rejected"]
    assert rejected, records
    assert "failed to find Action allocat" in rejected[-1]["message"]
    assert rejected[-1]["outcome"] == "failed"
    assert any(r["action"] == "configuration-loaded" for r in records)
    # ... and in the scheduler's log.
    log = ServiceLogs(stack, "scheduler").text()  # the leader's, whichever replica leads
    assert "invalid scheduler configuration; keeping the previous" in log
    assert "failed to find Action allocat" in log
