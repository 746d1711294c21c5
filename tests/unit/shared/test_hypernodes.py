"""HyperNodes as plain data: members parsed as written, and the nodes under each resolved
through nested members, patterns (searched, as Go's regexp does) and label selectors."""

from __future__ import annotations

import pytest

from shared.volcano.hypernodes import HyperNodeInfo, parse_hyper_node, resolve_node_sets, selects

pytestmark = pytest.mark.unit

NAMES = ["gpu-a0", "gpu-a1", "gpu-b0", "cpu-0"]
LABELS = [{"rack": "a"}, {"rack": "a"}, {"rack": "b", "gpu": "h100"}, {}]


def hyper_node(name: str, tier: object, *members: dict[str, object]) -> dict[str, object]:
    return {"metadata": {"name": name}, "spec": {"tier": tier, "members": list(members)}}


def node(**selector: object) -> dict[str, object]:
    return {"type": "Node", "selector": selector}


def child(name: str) -> dict[str, object]:
    return {"type": "HyperNode", "selector": {"exactMatch": {"name": name}}}


def test_members_are_parsed_as_written_and_odd_shapes_read_leniently() -> None:
    parsed = parse_hyper_node(hyper_node("s0", 1, node(exactMatch={"name": "gpu-a0"}), "junk", child("x")))
    assert (parsed.name, parsed.tier) == ("s0", 1)
    assert [(m.type, m.exact) for m in parsed.members] == [("Node", "gpu-a0"), ("HyperNode", "x")]
    assert parse_hyper_node(hyper_node("s1", "one")).tier == 0
    assert parse_hyper_node({"metadata": {"name": "s2"}, "spec": []}).members == ()


def test_node_sets_follow_names_patterns_labels_and_nesting() -> None:
    infos = [
        parse_hyper_node(obj)
        for obj in (
            hyper_node("rack-a", 1, node(regexMatch={"pattern": "a[0-9]$"})),  # searched, not anchored
            hyper_node(
                "rack-b", 1, node(labelMatch={"matchExpressions": [{"key": "gpu", "operator": "Exists"}]})
            ),
            hyper_node("bad", 1, node(regexMatch={"pattern": "("})),  # does not compile: nothing
            hyper_node("ghost", 1, node(exactMatch={"name": "missing"})),
            hyper_node("spine", 2, child("rack-a"), child("rack-b"), child("nowhere")),
            hyper_node("loop-a", 3, child("loop-b")),
            hyper_node("loop-b", 3, child("loop-a"), node(exactMatch={"name": "cpu-0"})),
        )
    ]
    sets = resolve_node_sets(infos, NAMES, LABELS)
    assert sets["rack-a"] == {0, 1}
    assert sets["rack-b"] == {2}
    assert sets["bad"] == sets["ghost"] == frozenset()
    assert sets["spine"] == {0, 1, 2}
    assert sets["loop-b"] == {3}  # the cycle back to loop-a adds nothing
    assert resolve_node_sets([HyperNodeInfo("empty", 1)], NAMES, LABELS) == {"empty": frozenset()}


def test_label_selectors_as_kubernetes_reads_them() -> None:
    labels = {"rack": "a", "gpu": "h100"}
    assert selects({}, labels)
    assert selects({"matchLabels": {"rack": "a"}}, labels)
    assert not selects({"matchLabels": {"rack": "b"}}, labels)
    assert selects({"matchExpressions": [{"key": "rack", "operator": "In", "values": ["a", "b"]}]}, labels)
    assert selects({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["x"]}]}, labels)
    assert not selects({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, labels)
    assert not selects({"matchExpressions": [{"key": "gpu", "operator": "Gt", "values": ["1"]}]}, labels)
