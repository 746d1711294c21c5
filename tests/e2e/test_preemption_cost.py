"""preemptioncost through the real stack: the job running longer survives, the fresher one is
evicted, the choice is explained to the beneficiary, and a budget holds the next eviction back.

Two 4-cpu nodes; every pod asks for most of a node. `long` starts first, `fresh` after it, both
at low priority in a queue of their own. `urgent` (high priority) needs one node: the cost model
evicts `fresh` (less work lost), where Volcano's priority-only choice would take whichever node
comes first. The choice is a `preempted-for` audit event on urgent's PodGroup naming fresh, its
cost and the alternative (long), and `phalanx job why urgent` shows it. The queue may lose one pod
per hour: `urgent-2` then finds `long` protected by the budget, and its verdict says so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from phalanx import stack as stacks
from phalanx.scenario import ExternalStack
from phalanx.scenario.kube import Kube
from phalanx.scenario.model import ClusterSpec
from tests.e2e.conftest import audit_records
from tests.e2e.test_reservation_backfill import job as backfill_job
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

QUEUE = f"pc-{uuid.uuid4().hex[:6]}"  # a queue of its own: no earlier test's evictions in its budget
CONF = """
actions: "enqueue, allocate, preempt"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins:
  - {name: predicates}
  - {name: nodeorder}
  - name: preemptioncost
    arguments: {queueMaxPods: 1, budgetWindow: 1h}
"""


def job(name: str, priority_class: str) -> dict[str, Any]:
    """One pod of 3.5 cpu running an hour, in the test's queue (the backfill test's Job shape)."""
    manifest = backfill_job(name, 1, 3600, priority_class)
    manifest["spec"]["queue"] = QUEUE
    return manifest


def running_pod(kube: Kube, name: str) -> dict[str, Any] | None:
    for pod in kube.list_objects("Pod", "default"):
        if pod["metadata"]["name"].startswith(f"{name}-worker-"):
            status = pod.get("status") or {}
            if status.get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp"):
                return pod
    return None


def started(kube: Kube, name: str) -> datetime | None:
    pod = running_pod(kube, name)
    when = (pod or {}).get("status", {}).get("startTime")
    return datetime.fromisoformat(str(when).replace("Z", "+00:00")) if when else None


def condition_messages(kube: Kube, job_name: str) -> str:
    groups = [
        g
        for g in kube.list_objects("PodGroup", "default")
        if g["metadata"]["name"].startswith(f"{job_name}-")
    ]
    return " ".join(
        c.get("message", "") for g in groups for c in (g.get("status") or {}).get("conditions", [])
    )


def job_of(podgroup: str) -> str:
    """The Volcano Job of a PodGroup "namespace/job-<uid>"."""
    return podgroup.split("/")[1].split("-")[0]


def budget_message(message: str) -> str | None:
    return message if "preemption budget" in message else None


def test_the_fresher_job_is_evicted_explained_and_a_budget_holds_the_next(stack: stacks.Stack) -> None:
    cluster = ClusterSpec.model_validate(
        {
            "nodes": [{"namePrefix": "pc-", "count": 2, "cpu": "4", "memory": "8Gi"}],
            "queues": [{"name": QUEUE}],
            "priorityClasses": [{"name": "pc-low", "value": 1}, {"name": "pc-high", "value": 1000}],
        }
    )
    ExternalStack(Path(stack.state_dir)).reset(cluster, CONF)
    kube = Kube(Path(stack.kubeconfig), stack.simulator_url)
    try:
        kube.apply(job("long", "pc-low"))
        long_start = eventually(lambda: started(kube, "long"), "long runs")
        kube.apply(job("fresh", "pc-low"))
        fresh_start = eventually(lambda: started(kube, "fresh"), "fresh runs")
        assert fresh_start > long_start  # fresh has lost less work since it started

        kube.apply(job("urgent", "pc-high"))
        eventually(lambda: started(kube, "urgent"), "urgent runs in fresh's place", within=120)
        assert running_pod(kube, "long") is not None
        assert running_pod(kube, "fresh") is None

        records = eventually(
            lambda: [
                r for r in audit_records(stack, "scheduler.preempted-for") if r["name"].startswith("urgent-")
            ],
            "the preemption explained on the audit stream",
        )
        details = records[-1]["details"]
        assert [job_of(v["job"]) for v in details["victims"]] == ["fresh"]
        alternatives = details["alternatives"]
        assert [job_of(v["job"]) for a in alternatives for v in a["victims"]] == ["long"]
        assert alternatives[0]["cost"] > details["cost"]

        why = subprocess.run(
            [sys.executable, "-m", "phalanx.cli", "job", "why", "urgent", "--state-dir", stack.state_dir],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "KUBECONFIG": stack.kubeconfig},
        )
        assert why.returncode == 0, why.stderr
        assert "preempted-for" in why.stdout
        assert "instead of default/long-" in why.stdout

        # The queue's budget (one pod an hour) is spent: the next preemption waits and says so.
        kube.apply(job("urgent-2", "pc-high"))
        message = eventually(
            lambda: budget_message(condition_messages(kube, "urgent-2")),
            "urgent-2 held back by the budget",
        )
        assert f"queue {QUEUE}'s preemption budget has 0 pod(s) left in this window" in message
        assert running_pod(kube, "long") is not None
        assert started(kube, "urgent-2") is None
    finally:
        kube.close()
