"""The details of a `preempted-for` audit event (core/cycle_records.preemption_details): what an
operator reads on the audit stream and `phalanx job why` summarises."""

from __future__ import annotations

import pytest

from services.scheduler.core.cycle_records import preemption_details
from services.scheduler.core.plan import PreemptionNote, VictimCost

pytestmark = pytest.mark.unit


def test_details_name_victims_their_cost_and_the_alternatives() -> None:
    fresh = VictimCost(
        gang_uid="f", job="ml/fresh", cost=0.5, detail="cost 0.50 (0.40 h lost x 1 GPUs, 1 pods)"
    )
    long = VictimCost(
        gang_uid="l", job="ml/long", cost=20.0, detail="cost 20.00 (20.00 h lost x 1 GPUs, 1 pods)"
    )
    note = PreemptionNote(
        gang_uid="u",
        namespace="ml",
        name="urgent",
        node="gpu-2",
        victims=(fresh,),
        cost=0.5,
        alternatives=(("gpu-1", (long,), 20.0),),
        message="evicts ml/fresh on gpu-2 (total cost 0.50); instead of ml/long on gpu-1: costs 20.00",
    )
    assert preemption_details(note) == {
        "node": "gpu-2",
        "victims": [{"job": "ml/fresh", "cost": 0.5, "why": fresh.detail}],
        "cost": 0.5,
        "alternatives": [
            {"node": "gpu-1", "victims": [{"job": "ml/long", "cost": 20.0, "why": long.detail}], "cost": 20.0}
        ],
    }
