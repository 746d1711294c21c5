"""`phalanx up --scale nats=3 --scale admission=2` under loss: gangs keep being admitted, scheduled
and completed while the NATS server leading the CLUSTER stream and one admission replica are
SIGKILLed and left dead.

The stack is the chaos runner's own (one for this file: a differently configured stack), the
faults are `stop:` faults (never restarted), and the oracle judges the simulated API server's
trace: no pod bound twice, no node over-committed, no gang partly bound, no pod created or
Scheduled twice, the backlog moving again after each fault, and every job Completed. The two
admission replicas served one certificate, from the Secret the first of them created.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from phalanx.chaos import plan, report, runner

pytestmark = pytest.mark.e2e
GANGS = 8
SEED = 11


def served_serials(log_path: Path) -> set[str]:
    serials = set()
    for line in log_path.read_text().splitlines():
        if line.startswith("{") and "serving certificate loaded" in line:
            serials.add(json.loads(line)["serial"])
    return serials


@pytest.mark.timeout(600)
def test_gangs_complete_while_a_nats_server_and_an_admission_replica_die(
    tmp_path: Path, own_servers: None
) -> None:
    settings = runner.ChaosSettings(
        seed=SEED,
        duration_s=60,
        gangs=GANGS,
        fault_every_s=15,
        settle_s=240,
        state_dir=tmp_path / "stack",
        scale=(("nats", 3), ("admission", 2)),
        fault_kinds=("stop:nats-leader", "stop:admission-2"),
    )
    result = runner.run(settings, say=print)
    print(report.render(result))

    assert [line.split()[2] for line in result.fault_log] == ["stop:nats-leader", "stop:admission-2"]
    assert all("left stopped" in line for line in result.fault_log), result.fault_log
    assert result.verdict.violations == []
    assert result.sampled_violations == []
    figures = result.verdict.figures
    assert figures["jobs by phase"] == {"Completed": GANGS}
    assert figures["gangs bound"] == GANGS
    assert figures["binds"] == sum(g.replicas for g in plan.gangs(SEED, 60, GANGS))

    logs = tmp_path / "stack" / "logs"
    first, second = served_serials(logs / "admission.log"), served_serials(logs / "admission-2.log")
    assert first, "the first replica served a certificate"
    assert first == second, "both replicas served the one certificate of the shared Secret"
