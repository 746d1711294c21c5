"""Server-side apply's field ownership, without HTTP (services/simulator/admission/managed_fields.py)."""

from __future__ import annotations

from typing import Any

import pytest

from services.simulator.admission import managed_fields as mf
from services.simulator.store.errors import ApiError

pytestmark = pytest.mark.unit
NOW = "2026-01-01T00:00:00Z"


def config(**data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data}


def owners(obj: dict[str, Any]) -> dict[tuple[str, str], set[tuple[str, ...]]]:
    return mf.owners_of(obj)


def test_creating_by_apply_owns_exactly_the_applied_fields() -> None:
    created = mf.apply(None, config(a="1"), "tool", force=False, now=NOW)

    assert owners(created) == {("tool", "Apply"): {("data", "a")}}
    assert created["metadata"]["managedFields"][0]["fieldsV1"] == {"f:data": {"f:a": {}}}


def test_a_different_value_owned_by_another_manager_conflicts_and_force_takes_it() -> None:
    current = mf.apply(None, config(a="1"), "tool", force=False, now=NOW)
    current = mf.record_update(current, {**current, "data": {"a": "2"}}, "editor", NOW)

    with pytest.raises(ApiError) as conflict:
        mf.apply(current, config(a="3"), "tool", force=False, now=NOW)
    forced = mf.apply(current, config(a="3"), "tool", force=True, now=NOW)

    assert conflict.value.code == 409
    assert conflict.value.causes[0].field == ".data.a"
    assert 'conflict with "editor" using v1' in conflict.value.message
    assert forced["data"] == {"a": "3"}
    assert owners(forced) == {("tool", "Apply"): {("data", "a")}}


def test_the_same_value_is_shared_without_conflict() -> None:
    current = mf.apply(None, config(a="1"), "one", force=False, now=NOW)

    shared = mf.apply(current, config(a="1"), "two", force=False, now=NOW)

    assert owners(shared)[("two", "Apply")] == {("data", "a")}


def test_a_field_dropped_from_the_configuration_goes_unless_someone_else_owns_it() -> None:
    current = mf.apply(None, config(a="1", b="2"), "tool", force=False, now=NOW)
    current = mf.apply(current, config(b="2"), "other", force=False, now=NOW)

    after = mf.apply(current, config(), "tool", force=False, now=NOW)

    assert after["data"] == {"b": "2"}  # a went; b stays, "other" still applies it
