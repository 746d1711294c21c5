from __future__ import annotations

from typing import Any

import pytest

from services.simulator.store.api_resources import BY_KIND_NAME, NAMESPACES, PODS
from services.simulator.store.errors import ApiError
from services.simulator.store.history import WatchEvent
from services.simulator.store.store import Store
from tests.unit.simulator.conftest import FakeClock

pytestmark = pytest.mark.unit

JOBS, PODGROUPS, CONFIGMAPS = BY_KIND_NAME["Job"], BY_KIND_NAME["PodGroup"], BY_KIND_NAME["ConfigMap"]


def pod(name: str, **metadata: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, **metadata},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


@pytest.fixture
def store() -> Store:
    return Store(FakeClock(), history_size=100)


def test_create_fills_what_the_apiserver_fills(store: Store) -> None:
    created = store.create(PODS, {**pod(""), "metadata": {"generateName": "worker-"}}, "default")
    metadata = created["metadata"]
    assert metadata["name"].startswith("worker-")
    assert len(metadata["name"]) == len("worker-") + 5
    assert metadata["uid"]
    assert metadata["creationTimestamp"] == "2026-01-01T00:00:00Z"
    assert metadata["generation"] == 1
    assert int(metadata["resourceVersion"]) == store.resource_version
    assert created["status"]["phase"] == "Pending"
    assert created["spec"]["schedulerName"] == "default-scheduler"
    assert created["spec"]["restartPolicy"] == "Always"


def test_every_write_takes_the_next_cluster_wide_version(store: Store) -> None:
    first = store.create(PODS, pod("a"), "default")
    second = store.create(CONFIGMAPS, {"metadata": {"name": "c"}}, "default")
    assert int(second["metadata"]["resourceVersion"]) == int(first["metadata"]["resourceVersion"]) + 1


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({**pod(""), "metadata": {}}, "metadata.name", "Required value: name or generateName is required"),
        (pod("Bad_Name"), "metadata.name", 'Invalid value: "Bad_Name"'),
        ({"metadata": {"name": "p"}, "spec": {}}, "spec.containers", "Required value"),
    ],
    ids=["no-name", "not-dns-1123", "no-containers"],
)
def test_invalid_objects_get_422_with_field_causes(
    store: Store, body: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ApiError) as raised:
        store.create(PODS, body, "default")
    assert raised.value.code == 422
    assert raised.value.reason == "Invalid"
    assert [c.field for c in raised.value.causes] == [field]
    assert message in raised.value.causes[0].message


def test_duplicate_name_is_409_already_exists(store: Store) -> None:
    store.create(PODS, pod("a"), "default")
    with pytest.raises(ApiError) as raised:
        store.create(PODS, pod("a"), "default")
    assert (raised.value.code, raised.value.reason) == (409, "AlreadyExists")
    assert raised.value.message == 'pods "a" already exists'


def test_create_in_a_missing_namespace_is_404(store: Store) -> None:
    with pytest.raises(ApiError) as raised:
        store.create(PODS, pod("a"), "nowhere")
    assert raised.value.message == 'namespaces "nowhere" not found'


def test_update_with_a_stale_resource_version_is_409_conflict(store: Store) -> None:
    created = store.create(PODS, pod("a", labels={"v": "1"}), "default")
    new, old = store.prepare_update(
        PODS, "default", "a", {**created, "metadata": {**created["metadata"], "labels": {"v": "2"}}}
    )
    store.replace(PODS, new, old)
    with pytest.raises(ApiError) as raised:
        store.prepare_update(PODS, "default", "a", created)
    assert raised.value.code == 409
    assert "the object has been modified" in raised.value.message


def test_main_resource_update_keeps_status_and_status_update_keeps_spec(store: Store) -> None:
    created = store.create(PODS, pod("a"), "default")
    changed = {**created, "spec": {**created["spec"], "nodeName": "x"}, "status": {"phase": "Running"}}
    new, old = store.prepare_update(PODS, "default", "a", changed)
    updated = store.replace(PODS, new, old)
    assert updated["status"]["phase"] == "Pending"
    assert updated["metadata"]["generation"] == 2
    new, old = store.prepare_update(
        PODS, "default", "a", {**updated, "spec": {}, "status": {"phase": "Running"}}, status_only=True
    )
    updated = store.replace(PODS, new, old)
    assert updated["status"] == {"phase": "Running"}
    assert updated["spec"]["nodeName"] == "x"


def owned_by(owner: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
    ]


def test_deleting_a_job_collects_its_pods_and_podgroup(store: Store) -> None:
    job = store.create(JOBS, {"metadata": {"name": "j1"}, "spec": {"tasks": []}}, "default")
    store.create(PODGROUPS, {"metadata": {"name": "j1-pg", "ownerReferences": owned_by(job)}}, "default")
    store.create(PODS, pod("j1-worker-0", ownerReferences=owned_by(job)), "default")
    store.create(PODS, pod("unrelated"), "default")
    store.delete(JOBS, "default", "j1")
    assert [p["metadata"]["name"] for p in store.iterate(PODS)] == ["unrelated"]
    assert list(store.iterate(PODGROUPS)) == []


def test_a_pod_created_for_a_job_already_deleted_is_collected(store: Store) -> None:
    # A controller that has not yet seen the job's deletion creates a pod for it: the garbage
    # collector finds every owner absent and collects the pod, as it would sweep with the job.
    job = store.create(JOBS, {"metadata": {"name": "j1"}, "spec": {"tasks": []}}, "default")
    store.delete(JOBS, "default", "j1")
    events: list[WatchEvent] = []
    store.subscribe(PODS, events.append)
    created = store.create(PODS, pod("j1-worker-0", ownerReferences=owned_by(job)), "default")
    assert created["metadata"]["name"] == "j1-worker-0"  # the create itself succeeds
    assert store.find(PODS, "default", "j1-worker-0") is None
    assert [e.type for e in events] == ["ADDED", "DELETED"]


def test_a_reference_to_a_deleted_owner_beside_a_live_one_is_dropped(store: Store) -> None:
    gone = store.create(JOBS, {"metadata": {"name": "gone"}}, "default")
    kept = store.create(JOBS, {"metadata": {"name": "kept"}}, "default")
    store.delete(JOBS, "default", "gone")
    references = [*owned_by(gone), {**owned_by(kept)[0], "controller": False}]
    store.create(PODS, pod("p", ownerReferences=references), "default")
    remaining = store.get(PODS, "default", "p")["metadata"]["ownerReferences"]
    assert [r["uid"] for r in remaining] == [kept["metadata"]["uid"]]


def test_orphan_propagation_keeps_dependents_without_the_reference(store: Store) -> None:
    job = store.create(JOBS, {"metadata": {"name": "j1"}}, "default")
    store.create(PODS, pod("p", ownerReferences=owned_by(job)), "default")
    store.delete(JOBS, "default", "j1", propagation="Orphan")
    assert store.get(PODS, "default", "p")["metadata"]["ownerReferences"] == []


def test_finalizers_hold_a_deletion_until_removed(store: Store) -> None:
    store.create(CONFIGMAPS, {"metadata": {"name": "c", "finalizers": ["x/y"]}}, "default")
    marked = store.delete(CONFIGMAPS, "default", "c")
    assert marked["metadata"]["deletionTimestamp"]
    released = {**marked, "metadata": {**marked["metadata"], "finalizers": []}}
    store.update(CONFIGMAPS, released)
    assert store.find(CONFIGMAPS, "default", "c") is None


def test_deleting_a_namespace_deletes_what_it_holds(store: Store) -> None:
    store.create(NAMESPACES, {"metadata": {"name": "team"}})
    store.create(PODS, pod("a"), "team")
    store.delete(NAMESPACES, "", "team")
    assert list(store.iterate(PODS)) == []


def test_watch_history_replays_after_a_version_and_410s_when_dropped(store: Store) -> None:
    start = store.resource_version
    for i in range(5):
        store.create(CONFIGMAPS, {"metadata": {"name": f"c{i}"}}, "default")
    replay = store.events_since(CONFIGMAPS, start + 2)
    assert [e.object["metadata"]["name"] for e in replay] == ["c2", "c3", "c4"]
    for i in range(5, 150):
        store.create(CONFIGMAPS, {"metadata": {"name": f"c{i}"}}, "default")
    with pytest.raises(ApiError) as raised:
        store.events_since(CONFIGMAPS, start)
    assert raised.value.code == 410
    assert "too old resource version" in raised.value.message


def test_writes_made_by_a_listener_reach_everyone_after_the_event_they_answer(store: Store) -> None:
    seen: list[tuple[str, str]] = []

    def labeller(event: WatchEvent) -> None:
        if event.type == "ADDED":
            obj = event.object
            store.update(CONFIGMAPS, {**obj, "metadata": {**obj["metadata"], "labels": {"a": "b"}}})

    store.subscribe(CONFIGMAPS, labeller)
    store.subscribe(CONFIGMAPS, lambda e: seen.append((e.type, e.object["metadata"]["resourceVersion"])))
    store.create(CONFIGMAPS, {"metadata": {"name": "c"}}, "default")
    assert [t for t, _ in seen] == ["ADDED", "MODIFIED"]
    assert int(seen[0][1]) < int(seen[1][1])
