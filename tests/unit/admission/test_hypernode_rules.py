"""HyperNode admission: Volcano's ValidatingAdmissionPolicy and webhook rules, with its messages.

Each case is one broken rule; the first rule broken is the one reported, as the policy reports
it, and the Status message starts with Volcano's text.
"""

from __future__ import annotations

from typing import Any

import pytest

from services.admission.review import validate

from .builders import admission_review, context

pytestmark = pytest.mark.unit


def hypernode(*members: dict[str, Any], tier: Any = 1, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"tier": tier, "members": list(members), **spec}
    if tier is None:
        del body["tier"]
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "s0"},
        "spec": body,
    }


def node(**selector: Any) -> dict[str, Any]:
    return {"type": "Node", "selector": selector}


CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("no-members", hypernode(), "member must have at least one member", "spec.members"),
    (
        "no-selector",
        hypernode(node()),
        "member selector must have one of exactMatch, regexMatch, or labelMatch",
        "spec.members[0].selector",
    ),
    (
        "two-selectors",
        hypernode(node(exactMatch={"name": "node0"}, regexMatch={"pattern": "^node"})),
        "cannot specify more than one selector type (exactMatch, regexMatch, labelMatch)",
        "spec.members[0].selector",
    ),
    (
        "empty-exact-name",
        hypernode(node(exactMatch={"name": ""})),
        "member exactMatch name is required",
        "spec.members[0].selector.exactMatch.name",
    ),
    (
        "unqualified-exact-name",
        hypernode(node(exactMatch={"name": "-node0"})),
        "member exactMatch validate failed [name part must consist of alphanumeric characters",
        "spec.members[0].selector.exactMatch.name",
    ),
    (
        "empty-pattern",
        hypernode(node(regexMatch={"pattern": ""})),
        "member regexMatch pattern is required",
        "spec.members[0].selector.regexMatch.pattern",
    ),
    (
        "unmatched-parenthesis",
        hypernode(node(regexMatch={"pattern": "^(node"})),
        "member regexMatch pattern is invalid: unmatched parentheses",
        "spec.members[0].selector.regexMatch.pattern",
    ),
    (
        "unmatched-bracket",
        hypernode(node(regexMatch={"pattern": "node[0-3"})),
        "member regexMatch pattern is invalid: unmatched square brackets",
        "spec.members[0].selector.regexMatch.pattern",
    ),
    (
        "pattern-does-not-compile",
        hypernode(node(regexMatch={"pattern": "node\\"})),
        'spec.members.selector.regexMatch.pattern: Invalid value: "node\\\\": '
        "member regexMatch pattern is invalid",
        "spec.members.selector.regexMatch.pattern",
    ),
    ("no-tier", hypernode(node(exactMatch={"name": "node0"}), tier=None), "Required value", "spec.tier"),
    (
        "negative-tier",
        hypernode(node(exactMatch={"name": "node0"}), tier=-1),
        "spec.tier: Invalid value: -1: spec.tier in body should be greater than or equal to 0",
        "spec.tier",
    ),
    (
        "unknown-member-type",
        hypernode({"type": "Rack", "selector": {"exactMatch": {"name": "r0"}}}),
        'spec.members[0].type: Unsupported value: "Rack": supported values: "Node", "HyperNode"',
        "spec.members[0].type",
    ),
    (
        "tier-of-wrong-type",
        hypernode(node(exactMatch={"name": "node0"}), tier="one"),
        'spec.tier in body must be of type integer: "string"',
        "spec.tier",
    ),
]


@pytest.mark.parametrize(("manifest", "message", "field"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_a_broken_rule_is_refused_with_volcanos_message(
    manifest: dict[str, Any], message: str, field: str, operation: str
) -> None:
    old = manifest if operation == "UPDATE" else None
    response = validate(admission_review(manifest, operation, old=old), context())["response"]
    assert response["allowed"] is False
    assert message in response["status"]["message"]
    assert [cause["field"] for cause in response["status"]["details"]["causes"]] == [field]


VALID = [
    ("exact", hypernode(node(exactMatch={"name": "node0"}), node(exactMatch={"name": "node1"}))),
    ("regex", hypernode(node(regexMatch={"pattern": "^node[0-3]$"}))),
    ("label", hypernode(node(labelMatch={"matchLabels": {"rack": "r0"}}))),
    ("nested", hypernode({"type": "HyperNode", "selector": {"exactMatch": {"name": "s0"}}}, tier=2)),
    ("tier-zero", hypernode(node(exactMatch={"name": "node0"}), tier=0, tierName="host")),
]


@pytest.mark.parametrize("manifest", [c[1] for c in VALID], ids=[c[0] for c in VALID])
def test_valid_hypernodes_are_allowed_and_never_mutated(manifest: dict[str, Any]) -> None:
    review = admission_review(manifest)
    assert validate(review, context())["response"] == {"allowed": True, "uid": review["request"]["uid"]}
