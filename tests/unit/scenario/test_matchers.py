"""Paths and value matchers: what `fields`, `env` and the other entries compare, on plain data."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.scenario.matchers import (
    MISSING,
    check_matcher,
    describe,
    lookup,
    matches,
    parse_path,
    show,
    values_equal,
)

pytestmark = pytest.mark.unit

POD = {
    "metadata": {"name": "j1-worker-0", "labels": {"volcano.sh/job-name": "j1", "a.b": "c"}},
    "spec": {
        "nodeName": "node-1",
        "containers": [
            {
                "name": "main",
                "env": [{"name": "VK_TASK_INDEX", "value": "0"}, {"name": "X"}],
                "resources": {"requests": {"cpu": "1000m", "memory": "2Gi"}},
            },
        ],
    },
    "status": {"phase": "Running"},
}


@pytest.mark.parametrize(
    ("path", "tokens"),
    [
        ("spec.nodeName", ("spec", "nodeName")),
        ("metadata.labels[volcano.sh/job-name]", ("metadata", "labels", "volcano.sh/job-name")),
        ("spec.containers[0].env", ("spec", "containers", 0, "env")),
        ("data[worker.host]", ("data", "worker.host")),
        ("a[b][c].d", ("a", "b", "c", "d")),
    ],
    ids=["dotted", "bracketed-key", "index", "top-bracket", "chained-brackets"],
)
def test_parse_path(path: str, tokens: tuple[str | int, ...]) -> None:
    assert parse_path(path) == tokens


@pytest.mark.parametrize("path", ["", "a..b", "a.", ".a", "a[b", "a[]", "a]b"], ids=repr)
def test_bad_paths(path: str) -> None:
    with pytest.raises(ValueError, match="path"):
        parse_path(path)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("spec.nodeName", "node-1"),
        ("metadata.labels[volcano.sh/job-name]", "j1"),
        ("metadata.labels[a.b]", "c"),
        ("spec.containers[0].env[0].value", "0"),
        ("spec.containers[1]", MISSING),
        ("spec.nodeName.x", MISSING),
        ("status.reason", MISSING),
    ],
    ids=[
        "dotted",
        "key-with-slash",
        "key-with-dot",
        "deep-index",
        "index-past-end",
        "through-a-string",
        "missing",
    ],
)
def test_lookup(path: str, value: Any) -> None:
    assert lookup(POD, path) == value or (value is MISSING and lookup(POD, path) is MISSING)


@pytest.mark.parametrize(
    ("expected", "observed", "equal"),
    [
        ("node-1", "node-1", True),
        (3, "3", True),
        ("3", 3, True),
        ("1", "1000m", True),
        ("2Gi", 2147483648, True),
        ("2Gi", "2048Mi", True),
        ("2Gi", "2G", False),
        ("None", "None", True),
        (True, "true", True),
        (True, 1, False),
        ("a\nb", "a\nb", True),
        ("a\nb", "a b", False),
        ({"cpu": "1"}, {"cpu": "1000m"}, True),
        ({"cpu": "1"}, {"cpu": "1", "memory": "1Gi"}, False),
        ([1, "2"], ["1", 2], True),
        ([1], [1, 1], False),
        (None, MISSING, True),
        ("x", MISSING, False),
    ],
    ids=[
        "same-string",
        "int-vs-string",
        "string-vs-int",
        "millicores",
        "gi-vs-bytes",
        "gi-vs-mi",
        "binary-vs-decimal",
        "none-string",
        "bool-yaml",
        "bool-not-int",
        "multiline",
        "multiline-not-folded",
        "nested-quantity",
        "extra-key",
        "list",
        "list-length",
        "null-vs-absent",
        "value-vs-absent",
    ],
)
def test_values_equal(expected: Any, observed: Any, equal: bool) -> None:
    assert values_equal(expected, observed) is equal


@pytest.mark.parametrize(
    ("expected", "observed", "holds"),
    [
        ({"contains": "gang unschedulable"}, "3/3 tasks in gang unschedulable: x", True),
        ({"contains": "gang"}, MISSING, False),
        ({"contains": "1"}, 10, True),
        ({"present": True}, "", True),
        ({"present": True}, MISSING, False),
        ({"absent": True}, MISSING, True),
        ({"absent": True}, None, False),
        ({"absent": False}, "x", True),
        (
            {"includes": [{"name": "VK_TASK_INDEX", "value": "0"}]},
            [{"name": "A", "value": "1"}, {"name": "VK_TASK_INDEX", "value": "0"}],
            True,
        ),
        (
            {"includes": [{"name": "VK_TASK_INDEX", "value": "1"}]},
            [{"name": "VK_TASK_INDEX", "value": "0"}],
            False,
        ),
        ({"includes": ["a", "c"]}, ["a", "b", "c"], True),
        ({"includes": ["d"]}, ["a"], False),
        (
            {"includes": [{"name": "x", "value": {"contains": "ell"}}]},
            [{"name": "x", "value": "hello"}],
            True,
        ),
        ({"includes": []}, "not a list", False),
    ],
    ids=[
        "contains",
        "contains-absent",
        "contains-number",
        "present-empty",
        "present-missing",
        "absent",
        "absent-null",
        "absent-false",
        "includes-mapping",
        "includes-wrong-value",
        "includes-scalars",
        "includes-missing-scalar",
        "includes-nested-matcher",
        "includes-not-list",
    ],
)
def test_matchers(expected: Any, observed: Any, holds: bool) -> None:
    assert matches(expected, observed) is holds


def test_a_list_is_any_of_only_where_asked() -> None:
    assert matches(["Inqueue", "Running"], "Running", any_of=True)
    assert not matches(["Inqueue", "Running"], "Pending", any_of=True)
    assert not matches(["Inqueue", "Running"], "Running")
    assert matches(["a", "b"], ["a", "b"])


@pytest.mark.parametrize(
    "value",
    [{"contains": 3}, {"present": "yes"}, {"includes": "a"}, {"contains": "a", "absent": True}],
    ids=["contains-number", "present-string", "includes-string", "two-matchers"],
)
def test_malformed_matchers_are_refused(value: Any) -> None:
    with pytest.raises(ValueError, match=r"takes|exactly one"):
        check_matcher(value)


@pytest.mark.parametrize(
    ("expected", "any_of", "text"),
    [
        ({"contains": "x"}, False, "containing 'x'"),
        ({"absent": True}, False, "absent"),
        ({"present": False}, False, "absent"),
        (["Inqueue", "Running"], True, "one of Inqueue|Running"),
        ("a\nb", False, "'a\\nb'"),
        (True, False, "true"),
    ],
    ids=["contains", "absent", "not-present", "any-of", "multiline", "bool"],
)
def test_describe(expected: Any, any_of: bool, text: str) -> None:
    assert describe(expected, any_of=any_of) == text


def test_show_absent() -> None:
    assert show(MISSING) == "(absent)"


_KEY = st.text(alphabet="abcxyz-/.", min_size=1, max_size=8).filter(lambda k: "]" not in k)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(_KEY, st.integers(0, 9)), min_size=1, max_size=5))
def test_bracketed_paths_round_trip(tokens: list[str | int]) -> None:
    path = "".join(f"[{t}]" for t in tokens)
    parsed = parse_path(path)
    assert parsed == tuple(int(t) if isinstance(t, str) and t.isdigit() else t for t in tokens)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**6))
def test_quantities_compare_by_value(cores: int) -> None:
    assert values_equal(str(cores), f"{cores * 1000}m")
    assert values_equal(f"{cores}Ki", cores * 1024)
    assert not values_equal(str(cores), f"{cores * 1000 + 1}m")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(_JSON)
def test_every_value_equals_itself(value: Any) -> None:
    assert values_equal(value, value)
    assert matches({"present": True}, value)
