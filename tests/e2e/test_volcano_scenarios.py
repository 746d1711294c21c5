"""What a Volcano user hits next (#16), as scenarios through the real stack.

Each file in tests/e2e/scenarios/volcano shows one behaviour Volcano (or Kubernetes) documents:
scheduling gates, host ports, the preemption opt-outs (`volcano.sh/preemptable: "false"`, a
PriorityClass with `preemptionPolicy: Never`), the sla plugin's waiting time, a PodGroup gone
Unknown restarting its Job, hierarchical queues, a namespace's default queue, the ray and
hcclrank job plugins, a scheduler configuration naming what Phalanx does not implement, and pods
of other schedulers seen by our filters. Every scenario resets the cluster it needs, so they share
the package's stack.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx import stack as stacks
from phalanx.scenario import ExternalStack, run_files
from tests.e2e.conftest import audit_records
from tests.e2e.test_observability import scrape, value

pytestmark = pytest.mark.e2e

SCENARIOS = Path(__file__).parent / "scenarios" / "volcano"
SKIPPING_CONF = SCENARIOS / "10-unimplemented-conf-entries-skipped.yaml"


def _run(stack: stacks.Stack, scenario: Path) -> None:
    lines: list[str] = []
    report = run_files([scenario], ExternalStack(Path(stack.state_dir)), emit=lines.append)
    assert report.failed == 0, "\n".join(lines)
    assert report.passed > 0


@pytest.mark.parametrize(
    "scenario",
    [pytest.param(p, id=p.stem) for p in sorted(SCENARIOS.glob("*.yaml")) if p != SKIPPING_CONF],
)
def test_volcano_scenario_passes(stack: stacks.Stack, scenario: Path) -> None:
    _run(stack, scenario)


def test_unimplemented_plugins_and_actions_are_skipped_with_a_warning_and_a_metric(
    stack: stacks.Stack,
) -> None:
    _run(stack, SKIPPING_CONF)

    # The load is on the audit stream, as `phalanx events watch` shows it, warning of each entry
    # it skipped ...
    records = audit_records(stack, "scheduler.configuration-*")
    warned = [r["message"] for r in records if r["action"] == "configuration-loaded" and r["message"]]
    assert warned, records
    assert "plugin 'tdm' in tier 2 is a Volcano plugin that Phalanx does not implement: skipped" in warned[-1]
    assert "plugin 'cdp' in tier 1" in warned[-1]
    assert "action 'shuffle' is a Volcano action that Phalanx does not implement: skipped" in warned[-1]
    # ... and counted on the scheduler's /metrics while that configuration is the one in use.
    assert value(scrape(stack, "scheduler"), "phalanx_scheduler_conf_skipped_entries") == 3.0
