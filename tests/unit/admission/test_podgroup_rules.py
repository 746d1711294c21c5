"""PodGroup admission: the namespace's queue as default, queue existence and state, topology."""

from __future__ import annotations

from typing import Any

import pytest

from services.admission.rules import (
    QueueAdmissionFacts,
    compose,
    default_podgroup,
    validate_podgroup_create,
)

from .builders import context, podgroup

pytestmark = pytest.mark.unit

CTX = context(
    QueueAdmissionFacts("closed", state="Closed"),
    QueueAdmissionFacts("team-a"),
    namespace_queues={"team-a-ns": "team-a"},
)
CONFLICT = "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously."
BOTH = {"highestTierAllowed": 1, "highestTierName": "rack"}

DEFAULTS = [
    ("default-queue-in-annotated-namespace", podgroup(namespace="team-a-ns", queue="default"), "team-a"),
    ("no-queue-in-annotated-namespace", podgroup(namespace="team-a-ns"), "team-a"),
    ("no-queue-elsewhere", podgroup(), "default"),
    ("explicit-queue-kept", podgroup(namespace="team-a-ns", queue="closed"), "closed"),
]


@pytest.mark.parametrize(("manifest", "queue"), [c[1:] for c in DEFAULTS], ids=[c[0] for c in DEFAULTS])
def test_podgroup_queue_default(manifest: dict[str, Any], queue: str) -> None:
    assert default_podgroup(manifest, CTX)["spec"]["queue"] == queue


CASES: list[tuple[str, dict[str, Any], str, list[str]]] = [
    ("open-queue", podgroup(queue="team-a", minMember=2), "", []),
    ("no-queue-is-not-checked", podgroup(minMember=1), "", []),
    (
        "missing-queue",
        podgroup(queue="ghost"),
        'unable to find queue: queue.scheduling.volcano.sh "ghost" not found',
        ["spec.queue"],
    ),
    (
        "closed-queue",
        podgroup(queue="closed"),
        "can only submit PodGroup to queue with state `Open`, queue `closed` status is `Closed`.",
        ["spec.queue"],
    ),
    ("topology", podgroup(queue="team-a", networkTopology=BOTH), CONFLICT, ["spec.networkTopology"]),
    (
        "sub-group-topology",
        podgroup(
            queue="team-a",
            subGroupPolicy=[{"name": "a", "networkTopology": BOTH}, {"name": "b", "networkTopology": BOTH}],
        ),
        f"in subGroupPolicy 'a': {CONFLICT}",
        ["spec.subGroupPolicy[0].networkTopology"],
    ),
    (
        "everything-joined",
        podgroup(
            queue="closed", networkTopology=BOTH, subGroupPolicy=[{"name": "a", "networkTopology": BOTH}]
        ),
        "can only submit PodGroup to queue with state `Open`, queue `closed` status is `Closed`.; "
        f"{CONFLICT} in subGroupPolicy 'a': {CONFLICT}",
        ["spec.queue", "spec.networkTopology", "spec.subGroupPolicy[0].networkTopology"],
    ),
]


@pytest.mark.parametrize(("manifest", "message", "fields"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_podgroup_create_rule(manifest: dict[str, Any], message: str, fields: list[str]) -> None:
    errors = validate_podgroup_create(manifest, CTX)
    assert compose(errors, "join") == message
    assert [error.field for error in errors] == fields
