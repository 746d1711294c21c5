from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.simulator.admission.patches import apply_patch, json_patch, merge_patch, strategic_merge_patch
from services.simulator.store.errors import ApiError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [  # RFC 7386 appendix A, in part
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
    ids=["replace", "add", "delete", "list-by-value", "nested", "list-replaced", "nested-null"],
)
def test_merge_patch_follows_rfc7386(target: Any, patch: Any, expected: Any) -> None:
    assert merge_patch(target, patch) == expected


def test_merge_patch_leaves_its_input_untouched() -> None:
    target = {"spec": {"replicas": 1}}
    merge_patch(target, {"spec": {"replicas": 2}})
    assert target == {"spec": {"replicas": 1}}


@pytest.mark.parametrize(
    ("operations", "expected"),
    [
        ([{"op": "add", "path": "/b", "value": 2}], {"a": {"x": [1, 2]}, "b": 2}),
        ([{"op": "add", "path": "/a/x/-", "value": 3}], {"a": {"x": [1, 2, 3]}}),
        ([{"op": "add", "path": "/a/x/0", "value": 0}], {"a": {"x": [0, 1, 2]}}),
        ([{"op": "remove", "path": "/a/x/0"}], {"a": {"x": [2]}}),
        ([{"op": "replace", "path": "/a/x", "value": []}], {"a": {"x": []}}),
        ([{"op": "move", "from": "/a/x", "path": "/y"}], {"a": {}, "y": [1, 2]}),
        ([{"op": "copy", "from": "/a/x", "path": "/y"}], {"a": {"x": [1, 2]}, "y": [1, 2]}),
        ([{"op": "test", "path": "/a/x/1", "value": 2}], {"a": {"x": [1, 2]}}),
        ([{"op": "add", "path": "/a/k~1v", "value": 1}], {"a": {"x": [1, 2], "k/v": 1}}),
    ],
    ids=["add", "append", "insert", "remove", "replace", "move", "copy", "test", "escaped"],
)
def test_json_patch_operations(operations: list[dict[str, Any]], expected: Any) -> None:
    assert json_patch({"a": {"x": [1, 2]}}, operations) == expected


@pytest.mark.parametrize(
    "operations",
    [
        [{"op": "remove", "path": "/missing"}],
        [{"op": "replace", "path": "/a/nope", "value": 1}],
        [{"op": "test", "path": "/a/x/0", "value": 9}],
        [{"op": "add", "path": "/a/x/7", "value": 1}],
    ],
    ids=["remove-missing", "replace-missing", "test-fails", "index-out-of-range"],
)
def test_json_patch_that_cannot_apply_is_unprocessable(operations: list[dict[str, Any]]) -> None:
    with pytest.raises(ApiError) as raised:
        json_patch({"a": {"x": [1, 2]}}, operations)
    assert raised.value.code == 422


def test_strategic_merge_combines_containers_by_name() -> None:
    pod = {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}
    patch = {
        "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
        "spec": {"containers": [{"name": "b", "image": "z"}]},
    }
    result = strategic_merge_patch(pod, patch)
    assert result["spec"]["containers"] == [{"name": "a", "image": "x"}, {"name": "b", "image": "z"}]
    assert "$setElementOrder/containers" not in result


def test_strategic_merge_deletes_list_elements_by_directive() -> None:
    pod = {"status": {"conditions": [{"type": "Ready"}, {"type": "PodScheduled"}]}}
    patch = {"status": {"conditions": [{"type": "Ready", "$patch": "delete"}]}}
    assert strategic_merge_patch(pod, patch) == {"status": {"conditions": [{"type": "PodScheduled"}]}}


def test_unknown_patch_type_is_unsupported_media() -> None:
    with pytest.raises(ApiError) as raised:
        apply_patch("application/apply-patch+yaml", {}, {})
    assert raised.value.code == 415


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=10,
)
json_objects = st.dictionaries(st.text(max_size=3), json_values, max_size=4)


@settings(max_examples=150, deadline=None)
@given(json_objects, json_objects)
def test_merge_patch_is_idempotent(target: dict[str, Any], patch: dict[str, Any]) -> None:
    once = merge_patch(target, patch)
    assert merge_patch(once, patch) == once


@settings(max_examples=150, deadline=None)
@given(json_objects, json_values)
def test_json_patch_add_then_remove_restores_the_object(target: dict[str, Any], value: Any) -> None:
    key = "added-by-test"
    target.pop(key, None)
    path = f"/{key}"
    added = json_patch(target, [{"op": "add", "path": path, "value": value}])
    assert added[key] == value
    assert json_patch(added, [{"op": "remove", "path": path}]) == target
