"""The ray and hcclrank job plugins: what each pod and the job's Service look like (#16)."""

from __future__ import annotations

import pytest

from services.controller.core.plugins import plugin_object_names, plugin_objects
from services.controller.core.pods import build_pod

from .manifests import container, job, task

pytestmark = pytest.mark.unit

HEAD_COMMAND = (
    "ray start --head --block --dashboard-host=0.0.0.0 --port=6379 --dashboard-port=8265 "
    "--ray-client-server-port=10001"
)


def ray_job(plugins: dict[str, list[str]]) -> dict[str, object]:
    return job(
        task("head", 1, containers=[container(name="head"), container(name="sidecar")]),
        task("worker", 2, containers=[container(name="worker")]),
        plugins=plugins,
    )


def test_ray_head_starts_the_cluster_and_opens_its_ports() -> None:
    pod = build_pod(ray_job({"ray": []}), 0, 0)
    head, sidecar = pod["spec"]["containers"]
    assert head["command"] == ["sh", "-c", HEAD_COMMAND]
    assert head["ports"] == [
        {"name": "gcs", "containerPort": 6379},
        {"name": "dashboard", "containerPort": 8265},
        {"name": "client-server", "containerPort": 10001},
    ]
    assert "command" not in sidecar


def test_ray_workers_join_the_head_at_its_host_name() -> None:
    pod = build_pod(ray_job({"ray": ["--port=7000"]}), 1, 1)
    assert pod["spec"]["containers"][0]["command"] == [
        "sh",
        "-c",
        "ray start --block --address=tf-head-0.tf:7000",
    ]


def test_ray_service_selects_the_head_unless_svc_provides_the_name() -> None:
    (service,) = plugin_objects(ray_job({"ray": []}))
    assert service["kind"] == "Service"
    assert service["metadata"]["name"] == "tf"
    assert service["spec"]["selector"] == {
        "volcano.sh/job-name": "tf",
        "volcano.sh/job-namespace": "team-a",
        "volcano.sh/task-spec": "head",
    }
    assert [p["name"] for p in service["spec"]["ports"]] == ["gcs", "dashboard", "client-server"]
    assert plugin_object_names(ray_job({"ray": []})) == [("Service", "tf")]
    with_svc = plugin_objects(ray_job({"ray": [], "svc": []}))
    assert [o["kind"] for o in with_svc] == ["ConfigMap", "Service", "NetworkPolicy"]
    assert with_svc[1]["spec"]["clusterIP"] == "None"


def test_ray_without_a_head_task_changes_nothing() -> None:
    headless = job(task("worker", 2), plugins={"ray": []})
    assert "command" not in build_pod(headless, 0, 0)["spec"]["containers"][0]
    assert plugin_objects(headless) == []


@pytest.mark.parametrize(
    ("task_index", "pod_index", "rank"),
    [(0, 0, "0"), (0, 1, "1"), (1, 0, "2"), (1, 2, "4"), (2, 0, None)],
)
def test_hcclrank_ranks_masters_then_workers(task_index: int, pod_index: int, rank: str | None) -> None:
    j = job(task("master", 2), task("worker", 3), task("evaluator", 1), plugins={"hcclrank": []})
    annotations = build_pod(j, task_index, pod_index)["metadata"].get("annotations") or {}
    assert annotations.get("hccl/rankIndex") == rank


def test_hcclrank_takes_rank_from_the_pytorch_plugin_when_it_ran_first() -> None:
    j = job(task("master", 1), task("worker", 2), plugins={"pytorch": [], "hcclrank": ["--master=none"]})
    assert build_pod(j, 1, 1)["metadata"]["annotations"]["hccl/rankIndex"] == "2"
