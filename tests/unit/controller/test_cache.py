"""The controller's cache takes only news: no older version, no object deleted before it was primed."""

from __future__ import annotations

from typing import Any

import pytest

from services.controller.cache import Cache

pytestmark = pytest.mark.unit


def _job(name: str, uid: str, version: int) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": name, "uid": uid, "resourceVersion": str(version)}}


def test_a_replayed_event_of_an_object_deleted_before_the_priming_list_is_stale() -> None:
    cache = Cache()
    cache.prime("Job", [_job("kept", "u-kept", 10)], listed_version=20)
    with pytest.raises(Cache.Stale):
        cache.put("Job", _job("gone", "u-gone", 15))  # created and deleted before the list
    assert cache.by_uid("Job", "u-gone") is None


def test_objects_created_after_the_priming_list_and_newer_versions_are_news() -> None:
    cache = Cache()
    cache.prime("Job", [_job("kept", "u-kept", 10)], listed_version=20)
    assert cache.put("Job", _job("new", "u-new", 21)) is None
    assert cache.put("Job", _job("kept", "u-kept", 22)) == _job("kept", "u-kept", 10)
    with pytest.raises(Cache.Stale):
        cache.put("Job", _job("kept", "u-kept", 12))  # a replay of an older version
