"""`phalanx events watch` as a user types it, against the whole stack: what changed, for which job
or queue, as lines or JSON lines, and from where the last run stopped."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from phalanx import stack as stacks
from tests.e2e.conftest import job_phase, kubectl

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        shutil.which("kubectl") is None, reason="kubectl (Debian: kubernetes-client) not installed"
    ),
]

QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: watched-team}
spec: {weight: 1}
"""


def _job(name: str, queue: str = "default") -> str:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, namespace: default}}
spec:
  minAvailable: 2
  schedulerName: volcano
  queue: {queue}
  tasks:
    - name: worker
      replicas: 2
      template:
        metadata:
          annotations: {{simulator.phalanx/run-seconds: "1"}}
        spec:
          restartPolicy: Never
          containers:
            - name: worker
              image: busybox
              resources: {{requests: {{cpu: "1", memory: 1Gi}}}}
"""


def _watch(stack: stacks.Stack, *args: str) -> subprocess.CompletedProcess[str]:
    """`phalanx events watch ARGS`, stopping once the stream has been quiet for two seconds."""
    command = [sys.executable, "-m", "phalanx.cli", "events", "watch", *args]
    command += ["--idle-exit", "2", "--state-dir", stack.state_dir]
    watched = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert watched.returncode == 0, watched.stderr
    return watched


def _run_to_completion(stack: stacks.Stack, name: str, manifest: str) -> None:
    applied = kubectl(stack, "apply", "-f", "-", stdin=manifest)
    assert applied.returncode == 0, applied.stderr
    job_phase(stack, name, ("Completed",))


def test_the_recent_past_of_one_job_says_what_changed(stack: stacks.Stack) -> None:
    _run_to_completion(stack, "watched-job", _job("watched-job"))
    _run_to_completion(stack, "other-job", _job("other-job"))

    # No --since: the default look-back shows what already happened.
    lines = _watch(stack, "--job", "watched-job").stdout.splitlines()
    text = "\n".join(lines)
    assert all("watched-job" in line for line in lines), text
    phases = [line.split("  ")[-1] for line in lines if "controller.phase-changed" in line]
    assert phases[:1] == ["(new) → Pending"], text
    assert "Pending → Running" in phases, text
    assert phases[-1] == "Running → Completed", text
    placed = next(line for line in lines if "scheduler.placed" in line)
    pods = json.loads(
        kubectl(stack, "get", "pods", "-l", "volcano.sh/job-name=watched-job", "-o", "json").stdout
    )["items"]
    for pod in pods:  # each pod named with the node it was placed on
        assert f"{pod['spec']['nodeName']} (" in placed, placed
        assert pod["metadata"]["name"] in placed, placed
    assert "enqueued in queue default" in text


def test_a_queue_filter_shows_that_queues_jobs_only(stack: stacks.Stack) -> None:
    assert kubectl(stack, "apply", "-f", "-", stdin=QUEUE).returncode == 0
    _run_to_completion(stack, "team-job", _job("team-job", queue="watched-team"))

    lines = _watch(stack, "--queue", "watched-team").stdout.splitlines()
    text = "\n".join(lines)
    assert any("team-job" in line and "Running → Completed" in line for line in lines), text
    assert any("scheduler.placed" in line and "team-job" in line for line in lines), text
    assert all("team-job" in line or "watched-team" in line for line in lines), text
    assert "team-job" not in _watch(stack, "--queue", "default").stdout


def test_json_lines_carry_positions_to_continue_from(stack: stacks.Stack, tmp_path: Path) -> None:
    _run_to_completion(stack, "first-job", _job("first-job"))
    position = tmp_path / "audit.position"

    first = _watch(stack, "--json", "--job", "first-job", "--position-file", str(position))
    records = [json.loads(line) for line in first.stdout.splitlines()]
    assert records, first.stderr
    assert all(r["data"]["name"].startswith("first-job") for r in records)
    sequences = [int(r["sequence"]) for r in records]
    assert sequences == sorted(sequences)

    # From a position given by hand: only what came after it.
    after = _watch(stack, "--json", "--job", "first-job", "--after", str(sequences[0]))
    assert [int(json.loads(line)["sequence"]) for line in after.stdout.splitlines()] == sequences[1:]

    # From the position file: nothing seen twice, and what is new since.
    _run_to_completion(stack, "second-job", _job("second-job"))
    resumed = _watch(stack, "--json", "--position-file", str(position))
    names = {json.loads(line)["data"]["name"].split("-")[0] for line in resumed.stdout.splitlines()}
    assert "first" not in names
    assert "second" in names


def test_it_says_so_when_there_is_nothing_to_show(stack: stacks.Stack) -> None:
    watched = _watch(stack, "--job", "no-such-job")
    assert watched.stdout == ""
    assert watched.stderr.strip() == "No matching events in the last 1h; waiting for new ones (Ctrl-C stops)."
