"""Kubernetes quantities and resource vectors, as manifests write them."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.domain.quantity import Quantity, QuantityError, format_milli, parse_quantity, to_milli
from shared.domain.resources import Resources, pod_requests

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1),
        ("1000m", 1),
        ("500m", Fraction(1, 2)),
        ("1.5", Fraction(3, 2)),
        ("2Gi", 2**31),
        ("1Ki", 1024),
        ("1k", 1000),
        ("1M", 10**6),
        ("1e3", 1000),
        ("1E-3", Fraction(1, 1000)),
        ("100n", Fraction(1, 10**7)),
        (".5", Fraction(1, 2)),
        ("-1", -1),
        (3, 3),
        (0.25, Fraction(1, 4)),
    ],
    ids=str,
)
def test_parse(text: str, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "1.2.3", "Gi", "1GB", "one", "1 Gi", "1Kii"], ids=repr)
def test_invalid_quantity_names_the_accepted_form(text: str) -> None:
    with pytest.raises(QuantityError, match="quantities must match"):
        parse_quantity(text)


def test_equal_by_value_and_keeps_its_spelling() -> None:
    assert Quantity("1000m") == Quantity("1") == "1"
    assert Quantity("2Gi") == "2147483648"
    assert str(Quantity("1000m")) == "1000m"
    assert Quantity("500m") < Quantity("1")
    assert str(Quantity("1") + Quantity("500m")) == "1500m"
    assert str(Quantity("3Gi") - Quantity("1Gi")) == "2Gi"


def test_milli_rounds_up_like_kubernetes() -> None:
    assert to_milli("1n") == 1
    assert to_milli("2") == 2000


@given(st.integers(min_value=0, max_value=10**15))
def test_format_milli_round_trips(milli: int) -> None:
    assert to_milli(format_milli(milli)) == milli
    assert to_milli(format_milli(milli, binary=True)) == milli


def test_resource_vectors_add_subtract_and_fit() -> None:
    node = Resources.parse({"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": 1})
    request = Resources.parse({"cpu": "1500m", "memory": "2Gi"})
    assert request.fits_in(node)
    left = node - request * 2
    assert left.to_quantities() == {"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": "1"}
    assert not (request * 3).fits_in(node)
    assert (request * 3).insufficient(node) == ["cpu"]
    assert Resources.parse({"nvidia.com/gpu": 2}).insufficient(node) == ["nvidia.com/gpu"]
    assert Resources.parse({"cpu": "5"}).exceeds_any(Resources.parse({"memory": "1Gi"})) == []


def test_pod_request_is_containers_sum_raised_to_init_and_counts_one_pod() -> None:
    containers = [
        {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
        {"resources": {"limits": {"cpu": "500m"}}},  # a limit stands in for a missing request
    ]
    init = [{"resources": {"requests": {"cpu": "2"}}}]
    assert pod_requests(containers, init).to_quantities() == {"cpu": "2", "memory": "1Gi", "pods": "1"}
