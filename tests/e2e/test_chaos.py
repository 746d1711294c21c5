"""`phalanx chaos`, bounded: a few gangs under one fault of every kind, judged by the oracle.

Each service is SIGKILLed and restarted, NATS and PostgreSQL are restarted, and every one of the
six is paused (SIGSTOP) past the scheduler's lease, while gangs are being submitted and scheduled,
some of them to a queue whose capability makes them wait. The oracle, reading the simulated API
server's own trace, Events and Queues, must find no pod bound twice, no node over-committed and no
queue over its capability at any instant, no gang left partially bound, no pod created twice or
Scheduled twice, every bind within the recovery time after a fault, and every job Completed.

It runs a stack of its own (the chaos command starts and stops it), not the package's shared one,
because it restarts NATS and PostgreSQL. On a scaled stack (PHALANX_TEST_SCALE) each fault hits a
service's first replica, or the first NATS server of the cluster.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.chaos import plan, report, runner
from tests.e2e.conftest import requested_scale

pytestmark = pytest.mark.e2e
GANGS = 8


@pytest.mark.timeout(600)
def test_every_fault_once_leaves_every_invariant_intact_and_every_job_complete(
    tmp_path: Path, own_servers: None
) -> None:
    settings = runner.ChaosSettings(
        seed=5,
        duration_s=90,
        gangs=GANGS,
        fault_every_s=10,
        settle_s=240,
        state_dir=tmp_path / "stack",
        scale=tuple(sorted(requested_scale().items())),  # PHALANX_TEST_SCALE, as every e2e stack
    )
    result = runner.run(settings, say=print)
    print(report.render(result))

    assert {line.split()[2] for line in result.fault_log} == set(plan.FAULT_KINDS)
    assert not any("skipped" in line for line in result.fault_log), "NATS and PostgreSQL were restarted"
    assert result.verdict.violations == []
    assert result.sampled_violations == []
    figures = result.verdict.figures
    assert figures["jobs by phase"] == {"Completed": GANGS}
    assert figures["gangs bound"] == GANGS
    assert figures["gangs with no PodGroup found"] == 0
    assert figures["binds"] == sum(g.replicas for g in plan.gangs(5, 90, GANGS))
    assert result.samples > 0
    assert figures["peak queue use of its capability"] > 0, "the capped queue's gangs ran"
