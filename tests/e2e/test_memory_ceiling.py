"""Bounded memory (issue #28, item 4): the extremes do not blow any process past its stated ceiling.

On `phalanx up` (4 simulated nodes), the poison objects of test_poison.py go in through kubectl
(a 1.4 MiB Pod, a Job of 2147483647 replicas, a 1.2 MiB Command) and then a valid job; once that
job has completed, each process's peak resident memory (VmHWM in /proc/<pid>/status, the
kernel's high-water mark over the process's whole life) must be under the ceiling stated for it
in docs/poison.md ("Memory ceilings"). A ceiling that is exceeded names the process and its peak.
On a scaled stack, each replica of a service is held to that service's ceiling.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from phalanx import stack as stacks
from tests.e2e.test_poison import big_command, big_pod, create, job, run_valid_job, task, wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        shutil.which("kubectl") is None, reason="kubectl (Debian: kubernetes-client) not installed"
    ),
    pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc"),
]

MIB = 1024 * 1024
POISON_DOC = Path(__file__).parents[2] / "docs" / "poison.md"


def stated_ceilings() -> dict[str, int]:
    """Process name -> ceiling in bytes, from the table under "Memory ceilings" in docs/poison.md."""
    section = POISON_DOC.read_text().split("## Memory ceilings", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\w+) \| (\d+) MiB \|$", section, flags=re.MULTILINE)
    return {name: int(mib) * MIB for name, mib in rows}


def peak_rss(pid: int) -> int:
    """Bytes: the process's resident high-water mark."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for pid {pid}")


@pytest.mark.timeout(300)
def test_each_process_stays_under_its_memory_ceiling_through_the_extremes(stack: stacks.Stack) -> None:
    for name, obj in (
        ("big pod", big_pod()),
        ("huge gang", job("ceiling-huge", [task(2_147_483_647)])),
        ("big command", big_command() | {"metadata": {"name": "ceiling-command", "namespace": "default"}}),
    ):
        made = create(stack, obj)
        # The package's stack may have met these objects already (test_poison.py): that is fine.
        assert made.returncode == 0 or "AlreadyExists" in made.stderr, (name, made.stderr[:2000])
    assert run_valid_job(stack, "after-extremes") == "Completed"
    big_phase = ["get", "pod", "big-pod", "-o", "jsonpath={.status.phase}"]
    assert wait_for(stack, big_phase, "Succeeded") == "Succeeded"

    # On a scaled stack (PHALANX_TEST_SCALE) every replica (`controller-2`, ...) is held to its
    # service's ceiling: a replica is the same process with the same cache of the whole cluster.
    peaks = {process.name: peak_rss(process.pid) for process in stack.processes}
    service_of = {process.name: process.module for process in stack.processes}
    print({name: f"{peak / MIB:.0f} MiB" for name, peak in peaks.items()})  # for the docs' table
    ceilings = stated_ceilings()
    assert set(service_of.values()) == set(ceilings)  # every process has a stated ceiling, and only those
    over = {
        name: f"{peak / MIB:.0f} MiB > {ceilings[service_of[name]] / MIB:.0f} MiB"
        for name, peak in peaks.items()
        if peak > ceilings[service_of[name]]
    }
    assert over == {}
