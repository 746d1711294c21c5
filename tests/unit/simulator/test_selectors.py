from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.simulator.store.errors import ApiError
from services.simulator.store.selectors import (
    from_label_selector_object,
    parse_field_selector,
    parse_label_selector,
)

pytestmark = pytest.mark.unit

LABELS = {"app": "web", "tier": "front", "volcano.sh/job-name": "j1"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("missing!=x", True),
        ("app in (web, db)", True),
        ("app notin (web)", False),
        ("tier", True),
        ("!tier", False),
        ("!missing", True),
        ("app=web,tier=back", False),
        ("volcano.sh/job-name=j1", True),
        ("app in (db),tier", False),
    ],
    ids=lambda v: str(v),
)
def test_label_selector_matches_like_the_apiserver(selector: str, matches: bool) -> None:
    assert parse_label_selector(selector).matches_labels(LABELS) is matches


@pytest.mark.parametrize("selector", ["app=(", "a b c", "in (x)"], ids=str)
def test_malformed_label_selector_is_a_bad_request(selector: str) -> None:
    with pytest.raises(ApiError) as raised:
        parse_label_selector(selector)
    assert raised.value.code == 400


POD = {
    "metadata": {"name": "p", "namespace": "ns"},
    "spec": {"schedulerName": "volcano"},
    "status": {"phase": "Running"},
}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("metadata.name=p", True),
        ("metadata.namespace=other", False),
        ("spec.nodeName=", True),  # unassigned pods, as kube-scheduler asks for them
        ("spec.nodeName!=", False),
        ("status.phase!=Failed,status.phase!=Succeeded", True),
        ("spec.schedulerName=volcano", True),
    ],
    ids=str,
)
def test_field_selector_reads_dotted_paths(selector: str, matches: bool) -> None:
    assert parse_field_selector(selector).matches_fields(POD) is matches


def test_field_selector_without_operator_is_rejected() -> None:
    with pytest.raises(ApiError):
        parse_field_selector("metadata.name")


@pytest.mark.parametrize(
    ("spec", "matches"),
    [
        (None, True),
        ({"matchLabels": {"app": "web"}}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["back"]}]}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}, True),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, False),
    ],
    ids=["absent", "matchLabels", "In", "Exists", "DoesNotExist", "NotIn"],
)
def test_structured_label_selector(spec: dict | None, matches: bool) -> None:
    assert from_label_selector_object(spec).matches_labels(LABELS) is matches


label_value = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(label_value, label_value, min_size=1, max_size=5))
def test_a_selector_made_of_an_objects_labels_matches_it(labels: dict[str, str]) -> None:
    text = ",".join(f"{k}={v}" for k, v in labels.items())
    assert parse_label_selector(text).matches_labels(labels)
    assert not parse_label_selector(text).matches_labels({})
