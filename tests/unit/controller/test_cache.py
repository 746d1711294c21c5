"""The controller's cache takes only news: no older version, no object deleted before it was primed."""

from __future__ import annotations

from typing import Any

import pytest

from services.controller.cache import Cache
from shared.volcano.redaction import is_redacted, redact_env

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


def test_a_job_is_held_without_its_literal_environment_values_from_any_source() -> None:
    def with_secret(version: int) -> dict[str, Any]:
        job = _job("secret", "u-s", version)
        container = {"name": "c", "env": [{"name": "TOKEN", "value": "hunter2"}]}
        job["spec"] = {"tasks": [{"name": "w", "template": {"spec": {"containers": [container]}}}]}
        return job

    cache = Cache()
    cache.prime("Job", [with_secret(5)], listed_version=5)  # a list from the API: values included
    held = cache.by_uid("Job", "u-s")
    assert held is not None
    assert "hunter2" not in repr(held)
    assert is_redacted(held)
    # The watcher's echo of a later version, redacted on the bus, compares equal in spec.
    echo = with_secret(6)
    redact_env(echo)
    assert cache.put("Job", echo)["spec"] == echo["spec"]  # type: ignore[index]
