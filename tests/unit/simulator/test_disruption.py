"""PodDisruptionBudget status and the eviction verdict, without HTTP (disruption.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from services.simulator.admission.disruption import budget_status, eviction_verdict
from services.simulator.store.errors import ApiError

pytestmark = pytest.mark.unit
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def pod(name: str, *, ready: bool = True, phase: str = "Running", app: str = "a") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": {"app": app}},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def budget(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "b", "namespace": "ns", "generation": 1},
        "spec": {"selector": {"matchLabels": {"app": "a"}}, **spec},
    }


@pytest.mark.parametrize(
    ("spec", "desired", "allowed"),
    [
        ({"minAvailable": 2}, 2, 1),
        ({"minAvailable": "50%"}, 2, 1),  # 1.5 rounds up
        ({"maxUnavailable": "50%"}, 1, 2),  # 1.5 unavailable rounds up to 2
        ({"maxUnavailable": 0}, 3, 0),
    ],
)
def test_status_counts_healthy_covered_pods(spec: dict[str, Any], desired: int, allowed: int) -> None:
    pods = [pod("p0"), pod("p1"), pod("p2"), pod("other", app="b"), pod("done", phase="Succeeded")]

    status = budget_status(budget(**spec), pods, NOW)

    assert (status["expectedPods"], status["currentHealthy"]) == (3, 3)
    assert (status["desiredHealthy"], status["disruptionsAllowed"]) == (desired, allowed)


def test_a_pod_already_disrupted_is_not_counted_healthy() -> None:
    pdb = budget(minAvailable=1)
    pdb["status"] = {"disruptedPods": {"p0": "2026-01-01T00:00:00Z"}}

    status = budget_status(pdb, [pod("p0"), pod("p1")], NOW)

    assert (status["currentHealthy"], status["disruptionsAllowed"]) == (1, 0)


def test_the_verdict_spends_a_budget_only_on_healthy_pods() -> None:
    pdb = budget(minAvailable=2)
    pdb["status"] = budget_status(pdb, [pod("p0"), pod("p1")], NOW)

    assert eviction_verdict(pod("p2", phase="Pending"), [pdb]) is None  # pending: no budget needed
    assert eviction_verdict(pod("p3", ready=False), [pdb]) is None  # unhealthy, budget met
    with pytest.raises(ApiError) as refused:
        eviction_verdict(pod("p0"), [pdb])
    assert refused.value.code == 429
    with pytest.raises(ApiError) as ambiguous:
        eviction_verdict(pod("p0"), [pdb, pdb])
    assert ambiguous.value.code == 500
