"""Phalanx's runtime estimate on a Job or PodGroup (`phalanx.io/expected-runtime`, read by
reservation backfill): a good one is accepted, a bad one is refused naming the field and the rule."""

from __future__ import annotations

from typing import Any

import pytest

from services.admission.rules import QueueAdmissionFacts, validate_job_create, validate_podgroup_create
from shared.domain.runtime_estimate import runtime_seconds

from .builders import context, job, podgroup

pytestmark = pytest.mark.unit

CTX = context(QueueAdmissionFacts("default"))
FIELD = "metadata.annotations[phalanx.io/expected-runtime]"


def annotated(manifest: dict[str, Any], value: str) -> dict[str, Any]:
    manifest["metadata"]["annotations"] = {"phalanx.io/expected-runtime": value}
    return manifest


@pytest.mark.parametrize(
    ("value", "seconds"), [("2h30m", 9000.0), ("90s", 90.0), ("1.5h", 5400.0), ("45", 45.0)]
)
def test_durations_and_plain_seconds_are_estimates(value: str, seconds: float) -> None:
    assert runtime_seconds(value) == seconds
    assert validate_job_create(annotated(job(), value), CTX) == []
    assert validate_podgroup_create(annotated(podgroup(), value), CTX) == []


@pytest.mark.parametrize("value", ["soon", "0s", "-5", "2 hours", "inf"])
def test_a_bad_estimate_is_refused_with_the_field_and_the_rule(value: str) -> None:
    for errors in (
        validate_job_create(annotated(job(), value), CTX),
        validate_podgroup_create(annotated(podgroup(), value), CTX),
    ):
        assert [e.field for e in errors] == [FIELD]
        assert (
            'must be a duration such as "2h30m" or "90s", or a number of seconds, more than zero'
            in errors[0].message
        )
        assert repr(value) in errors[0].message
