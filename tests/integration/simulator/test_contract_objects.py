"""Create, read, update, patch, delete and their errors, through the official Python client."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.integration.simulator.conftest import pod_manifest
from tests.waiting import eventually

pytestmark = pytest.mark.integration

VOLCANO_JOB = ("batch.volcano.sh", "v1alpha1", "jobs")
PODGROUP = ("scheduling.volcano.sh", "v1beta1", "podgroups")
QUEUE = ("scheduling.volcano.sh", "v1beta1", "queues")


def test_discovery_lists_core_and_volcano_resources(api_client: client.ApiClient) -> None:
    assert client.VersionApi(api_client).get_code().major == "1"
    groups = {g.name for g in client.ApisApi(api_client).get_api_versions().groups}
    assert {
        "batch.volcano.sh",
        "scheduling.volcano.sh",
        "bus.volcano.sh",
        "scheduling.k8s.io",
        "coordination.k8s.io",
        "networking.k8s.io",
        "admissionregistration.k8s.io",
    } <= groups
    core_resources = {r.name for r in client.CoreV1Api(api_client).get_api_resources().resources}
    assert {"pods", "pods/status", "pods/binding", "pods/eviction", "nodes", "events"} <= core_resources


def test_create_fills_metadata_and_generate_name(core: client.CoreV1Api) -> None:
    body = pod_manifest("")
    body["metadata"] = {"generateName": "gen-"}
    created = core.create_namespaced_pod("default", body)
    assert created.metadata.name.startswith("gen-")
    assert created.metadata.uid
    assert created.metadata.creation_timestamp is not None
    assert created.status.phase == "Pending"
    assert created.spec.scheduler_name == "volcano"
    core.delete_namespaced_pod(created.metadata.name, "default")


def test_missing_name_is_422_with_a_field_cause(core: client.CoreV1Api) -> None:
    body = pod_manifest("")
    body["metadata"] = {}
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_pod("default", body)
    assert raised.value.status == 422
    assert '"field":"metadata.name"' in raised.value.body
    assert "name or generateName is required" in raised.value.body


def test_get_missing_is_404_status(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as raised:
        core.read_namespaced_pod("nope", "default")
    assert raised.value.status == 404
    assert '"reason":"NotFound"' in raised.value.body


def test_stale_update_is_409_and_fresh_update_succeeds(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("default", pod_manifest("upd"))
    created.metadata.labels = {"app": "upd", "v": "2"}
    updated = core.replace_namespaced_pod("upd", "default", created)
    assert updated.metadata.labels["v"] == "2"
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
    created.metadata.labels = {"v": "3"}
    with pytest.raises(ApiException) as raised:
        core.replace_namespaced_pod("upd", "default", created)
    assert raised.value.status == 409
    assert "the object has been modified" in raised.value.body
    core.delete_namespaced_pod("upd", "default")


def test_merge_and_json_patches(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    merged = core.patch_namespaced_config_map("cm", "default", {"data": {"b": "2", "a": None}})
    assert merged.data == {"b": "2"}
    patched = core.patch_namespaced_config_map(
        "cm", "default", [{"op": "add", "path": "/data/c", "value": "3"}]
    )
    assert patched.data == {"b": "2", "c": "3"}
    with pytest.raises(ApiException) as raised:
        core.patch_namespaced_config_map("cm", "default", [{"op": "remove", "path": "/data/zz"}])
    assert raised.value.status == 422


def test_status_subresource_writes_only_status(custom: client.CustomObjectsApi) -> None:
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "status-job"},
        "spec": {"minAvailable": 1, "tasks": []},
    }
    custom.create_namespaced_custom_object(*VOLCANO_JOB[:2], "default", VOLCANO_JOB[2], job)
    custom.patch_namespaced_custom_object_status(
        *VOLCANO_JOB[:2],
        "default",
        VOLCANO_JOB[2],
        "status-job",
        {"status": {"state": {"phase": "Running"}}, "spec": {"minAvailable": 9}},
    )
    custom.patch_namespaced_custom_object(
        *VOLCANO_JOB[:2], "default", VOLCANO_JOB[2], "status-job", {"status": {"state": None}}
    )
    stored = custom.get_namespaced_custom_object(*VOLCANO_JOB[:2], "default", VOLCANO_JOB[2], "status-job")
    assert stored["status"]["state"]["phase"] == "Running"
    assert stored["spec"]["minAvailable"] == 1
    assert stored["spec"]["queue"] == "default"  # the CRD's default


def test_queue_is_cluster_scoped_and_podgroup_namespaced(custom: client.CustomObjectsApi) -> None:
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q1"},
        "spec": {"weight": 1},
    }
    custom.create_cluster_custom_object(*QUEUE[:2], QUEUE[2], queue)
    assert custom.get_cluster_custom_object(*QUEUE[:2], QUEUE[2], "q1")["spec"]["weight"] == 1
    podgroup = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg1"},
        "spec": {"minMember": 2},
    }
    custom.create_namespaced_custom_object(*PODGROUP[:2], "default", PODGROUP[2], podgroup)
    listed = custom.list_namespaced_custom_object(*PODGROUP[:2], "default", PODGROUP[2])
    assert [i["metadata"]["name"] for i in listed["items"]] == ["pg1"]
    assert listed["items"][0]["spec"]["queue"] == "default"


def test_deleting_a_job_deletes_the_pods_and_podgroup_it_owns(
    core: client.CoreV1Api, custom: client.CustomObjectsApi
) -> None:
    job = custom.create_namespaced_custom_object(
        *VOLCANO_JOB[:2],
        "default",
        VOLCANO_JOB[2],
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "gc"},
            "spec": {"tasks": []},
        },
    )
    owner = [
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "name": "gc",
            "uid": job["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    custom.create_namespaced_custom_object(
        *PODGROUP[:2],
        "default",
        PODGROUP[2],
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "gc-pg", "ownerReferences": owner},
            "spec": {"minMember": 1},
        },
    )
    body = pod_manifest("gc-worker-0")
    body["metadata"]["ownerReferences"] = owner
    core.create_namespaced_pod("default", body)
    custom.delete_namespaced_custom_object(*VOLCANO_JOB[:2], "default", VOLCANO_JOB[2], "gc")
    with pytest.raises(ApiException):
        core.read_namespaced_pod("gc-worker-0", "default")
    with pytest.raises(ApiException):
        custom.get_namespaced_custom_object(*PODGROUP[:2], "default", PODGROUP[2], "gc-pg")


def test_label_and_field_selectors_filter_lists(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "selectors"}})
    for name in ("s1", "s2"):
        core.create_namespaced_pod("selectors", pod_manifest(name))
    core.create_namespaced_pod("selectors", pod_manifest("s3", scheduler="default-scheduler"))
    by_label = core.list_namespaced_pod("selectors", label_selector="app in (s1,s3)")
    assert sorted(p.metadata.name for p in by_label.items) == ["s1", "s3"]
    by_name = core.list_namespaced_pod("selectors", field_selector="metadata.name=s2")
    assert [p.metadata.name for p in by_name.items] == ["s2"]
    ours = core.list_pod_for_all_namespaces(
        field_selector="spec.schedulerName=volcano,metadata.namespace=selectors"
    )
    assert sorted(p.metadata.name for p in ours.items) == ["s1", "s2"]
    bound = eventually(lambda: core.list_namespaced_pod("selectors", field_selector="spec.nodeName!=").items)
    assert [p.metadata.name for p in bound] == ["s3"]
    running = eventually(
        lambda: core.list_namespaced_pod("selectors", field_selector="status.phase=Running").items
    )
    assert [p.metadata.name for p in running] == ["s3"]


def test_pagination_with_limit_and_continue(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "pages"}})
    for i in range(5):
        core.create_namespaced_config_map("pages", {"metadata": {"name": f"c{i}"}})
    first = core.list_namespaced_config_map("pages", limit=2)
    assert [c.metadata.name for c in first.items] == ["c0", "c1"]
    rest = core.list_namespaced_config_map("pages", limit=10, _continue=first.metadata._continue)
    assert [c.metadata.name for c in rest.items] == ["c2", "c3", "c4"]
    assert rest.metadata._continue is None


def test_events_can_be_selected_by_involved_object(core: client.CoreV1Api) -> None:
    core.create_namespaced_event(
        "default",
        {
            "metadata": {"name": "p.1"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "reason": "Scheduled",
            "message": "assigned",
            "type": "Normal",
        },
    )
    found = core.list_namespaced_event(
        "default", field_selector="involvedObject.name=p,involvedObject.kind=Pod"
    )
    assert [e.reason for e in found.items] == ["Scheduled"]


def test_writes_behind_a_rate_limit_still_all_succeed() -> None:
    from tests.simulator_thread import running_simulator

    with running_simulator(qps=200, burst=2) as sim:
        api = client.ApiClient(sim.client_configuration())
        core = client.CoreV1Api(api)
        for i in range(10):
            core.create_namespaced_config_map("default", {"metadata": {"name": f"limited-{i}"}})
        assert len(core.list_namespaced_config_map("default").items) == 10
        api.close()
