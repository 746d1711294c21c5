"""List and watch through the official client: resourceVersion, bookmarks, selectors, 410."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests.simulator_thread import RunningSimulator, running_simulator

pytestmark = pytest.mark.integration


def collect(core: client.CoreV1Api, namespace: str, count: int, **kwargs: Any) -> list[tuple[str, str]]:
    events: list[tuple[str, str]] = []
    stream = watch.Watch()
    for event in stream.stream(core.list_namespaced_config_map, namespace, timeout_seconds=5, **kwargs):
        name = event["object"].metadata.name if event["type"] != "BOOKMARK" else ""
        events.append((event["type"], name))
        if len(events) >= count:
            stream.stop()
    return events


def test_watch_from_a_list_version_sees_every_later_change(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "w1"}})
    core.create_namespaced_config_map("w1", {"metadata": {"name": "before"}})
    listed = core.list_namespaced_config_map("w1")
    core.create_namespaced_config_map("w1", {"metadata": {"name": "a"}})
    core.patch_namespaced_config_map("a", "w1", {"data": {"k": "v"}})
    core.delete_namespaced_config_map("a", "w1")
    events = collect(core, "w1", 3, resource_version=listed.metadata.resource_version)
    assert events == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


def test_watch_without_a_version_starts_with_the_current_objects(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "w2"}})
    core.create_namespaced_config_map("w2", {"metadata": {"name": "x"}})
    assert collect(core, "w2", 1) == [("ADDED", "x")]


def test_live_events_reach_a_running_watch(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "w3"}})
    version = core.list_namespaced_config_map("w3").metadata.resource_version
    timer = threading.Timer(
        0.3, lambda: core.create_namespaced_config_map("w3", {"metadata": {"name": "late"}})
    )
    timer.start()
    try:
        assert collect(core, "w3", 1, resource_version=version) == [("ADDED", "late")]
    finally:
        timer.join()


def test_bookmarks_are_sent_when_allowed(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "w4"}})
    version = core.list_namespaced_config_map("w4").metadata.resource_version
    events = collect(core, "w4", 1, resource_version=version, allow_watch_bookmarks=True)
    assert events == [("BOOKMARK", "")]


def test_an_object_leaving_a_selector_is_seen_as_deleted(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "w5"}})
    core.create_namespaced_config_map("w5", {"metadata": {"name": "c", "labels": {"keep": "yes"}}})
    version = core.list_namespaced_config_map("w5").metadata.resource_version
    core.patch_namespaced_config_map("c", "w5", {"metadata": {"labels": {"keep": "no"}}})
    core.patch_namespaced_config_map("c", "w5", {"metadata": {"labels": {"keep": "yes"}}})
    events = collect(core, "w5", 2, resource_version=version, label_selector="keep=yes")
    assert events == [("DELETED", "c"), ("ADDED", "c")]


def test_watch_timeout_ends_the_stream(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "w6"}})
    version = core.list_namespaced_config_map("w6").metadata.resource_version
    events = list(
        watch.Watch().stream(
            core.list_namespaced_config_map, "w6", resource_version=version, timeout_seconds=1
        )
    )
    assert events == []


def test_a_watch_older_than_the_kept_history_gets_410_gone() -> None:
    with running_simulator(history_size=100) as sim:
        api = client.ApiClient(sim.client_configuration())
        core = client.CoreV1Api(api)
        start = core.list_namespaced_config_map("default").metadata.resource_version
        for i in range(120):
            core.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}"}})
        with pytest.raises(ApiException) as raised:
            list(
                watch.Watch().stream(
                    core.list_namespaced_config_map, "default", resource_version=start, timeout_seconds=2
                )
            )
        assert raised.value.status == 410
        api.close()


def test_a_streaming_list_marks_the_end_of_its_initial_events(
    simulator: RunningSimulator, core: client.CoreV1Api
) -> None:
    core.create_namespace({"metadata": {"name": "w7"}})
    core.create_namespaced_config_map("w7", {"metadata": {"name": "x"}})
    params = {
        "watch": "true",
        "sendInitialEvents": "true",
        "allowWatchBookmarks": "true",
        "resourceVersionMatch": "NotOlderThan",
        "timeoutSeconds": "1",
    }
    with httpx.stream("GET", f"{simulator.url}/api/v1/namespaces/w7/configmaps", params=params) as response:
        events = [json.loads(line) for line in response.iter_lines() if line]
    assert [e["type"] for e in events[:2]] == ["ADDED", "BOOKMARK"]
    assert events[0]["object"]["metadata"]["name"] == "x"
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
