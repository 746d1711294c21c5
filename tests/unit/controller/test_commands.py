"""bus.volcano.sh Commands: routed to a job, a queue, or refused."""

from __future__ import annotations

from typing import Any

import pytest

from services.controller.core.commands import command_manifest, decide_command

pytestmark = pytest.mark.unit


def command(action: str, api_version: str, kind: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "c1", "namespace": "ns"},
        "action": action,
        "target": {"apiVersion": api_version, "kind": kind, "name": "t", "uid": "u"},
    }


@pytest.mark.parametrize(
    ("action", "api_version", "kind", "routed"),
    [
        ("AbortJob", "batch.volcano.sh/v1alpha1", "Job", "job"),
        ("ResumeJob", "batch.volcano.sh/v1alpha1", "Job", "job"),
        ("RestartJob", "batch.volcano.sh/v1alpha1", "Job", "job"),
        ("CompleteJob", "batch.volcano.sh/v1alpha1", "Job", "job"),
        ("TerminateJob", "batch.volcano.sh/v1alpha1", "Job", "job"),
        ("CloseQueue", "batch.volcano.sh/v1alpha1", "Job", "ignore"),
        ("OpenQueue", "scheduling.volcano.sh/v1beta1", "Queue", "queue"),
        ("CloseQueue", "scheduling.volcano.sh/v1beta1", "Queue", "queue"),
        ("AbortJob", "scheduling.volcano.sh/v1beta1", "Queue", "ignore"),
        ("AbortJob", "apps/v1", "Deployment", "ignore"),
    ],
    ids=lambda v: str(v),
)
def test_command_routing(action: str, api_version: str, kind: str, routed: str) -> None:
    decision = decide_command(command(action, api_version, kind))
    assert decision.kind == routed
    assert (decision.action, decision.name, decision.uid) == (action, "t", "u")
    assert bool(decision.reason) == (routed == "ignore")


def test_command_manifest_like_vcctl() -> None:
    target = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "myjob", "uid": "u1"},
    }
    made = command_manifest(target, "AbortJob", "ns")
    assert made["metadata"]["generateName"] == "myjob-abortjob-"
    assert made["target"]["controller"] is True
    assert decide_command(made).kind == "job"
