"""Job defaulting on CREATE: each of Volcano's defaults, and what it leaves alone."""

from __future__ import annotations

from typing import Any

import pytest

from services.admission.rules import default_job

from .builders import job, task

pytestmark = pytest.mark.unit

CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "empty-spec-fields",
        job(tasks=[task(replicas=2)]),
        {
            "queue": "default",
            "schedulerName": "volcano",
            "maxRetry": 3,
            "minAvailable": 2,
        },
    ),
    (
        "explicit-values-kept",
        job(queue="team-a", schedulerName="other", maxRetry=7, minAvailable=1),
        {"queue": "team-a", "schedulerName": "other", "maxRetry": 7, "minAvailable": 1},
    ),
    (
        "min-available-sums-task-minimums",
        job(tasks=[task("ps", 1), task("worker", 4, minAvailable=2)]),
        {"minAvailable": 3},
    ),
    (
        "min-available-from-partitions",
        job(
            tasks=[
                task(
                    replicas=8,
                    partitionPolicy={"totalPartitions": 4, "partitionSize": 2, "minPartitions": 3},
                )
            ]
        ),
        {"minAvailable": 6},
    ),
    (
        "zero-min-partitions-falls-back-to-replicas",
        job(tasks=[task(replicas=8, partitionPolicy={"totalPartitions": 4, "partitionSize": 2})]),
        {"minAvailable": 8},
    ),
    ("tensorflow-gets-svc", job(plugins={"tensorflow": []}), {"plugins": {"tensorflow": [], "svc": []}}),
    (
        "pytorch-gets-svc",
        job(plugins={"pytorch": ["--port=23"]}),
        {"plugins": {"pytorch": ["--port=23"], "svc": []}},
    ),
    ("ray-gets-svc", job(plugins={"ray": []}), {"plugins": {"ray": [], "svc": []}}),
    ("mpi-gets-svc-and-ssh", job(plugins={"mpi": []}), {"plugins": {"mpi": [], "svc": [], "ssh": []}}),
    (
        "own-svc-args-kept",
        job(plugins={"mpi": [], "svc": ["--x"]}),
        {"plugins": {"mpi": [], "svc": ["--x"], "ssh": []}},
    ),
    ("env-alone-unchanged", job(plugins={"env": []}), {"plugins": {"env": []}}),
]


@pytest.mark.parametrize(("manifest", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_job_spec_defaults(manifest: dict[str, Any], expected: dict[str, Any]) -> None:
    spec = default_job(manifest)["spec"]
    assert {key: spec[key] for key in expected} == expected


def test_task_defaults_name_min_available_and_max_retry() -> None:
    manifest = job(tasks=[task(name="", replicas=3), task(name="", replicas=2, maxRetry=5, minAvailable=1)])
    manifest["spec"]["tasks"][0].pop("name")
    tasks = default_job(manifest)["spec"]["tasks"]
    assert [(t["name"], t["minAvailable"], t["maxRetry"]) for t in tasks] == [
        ("default0", 3, 3),
        ("default1", 1, 5),
    ]


def test_host_network_gets_cluster_dns_policy() -> None:
    manifest = job(tasks=[task()])
    manifest["spec"]["tasks"][0]["template"]["spec"]["hostNetwork"] = True
    pod_spec = default_job(manifest)["spec"]["tasks"][0]["template"]["spec"]
    assert pod_spec["dnsPolicy"] == "ClusterFirstWithHostNet"


def test_host_network_keeps_an_explicit_dns_policy() -> None:
    manifest = job(tasks=[task()])
    manifest["spec"]["tasks"][0]["template"]["spec"] |= {"hostNetwork": True, "dnsPolicy": "Default"}
    pod_spec = default_job(manifest)["spec"]["tasks"][0]["template"]["spec"]
    assert pod_spec["dnsPolicy"] == "Default"


def test_scheduler_name_comes_from_the_webhook_setting() -> None:
    assert default_job(job(), scheduler_name="phalanx")["spec"]["schedulerName"] == "phalanx"


def test_input_is_never_changed() -> None:
    manifest = job(tasks=[task(name="", replicas=2)], plugins={"mpi": []})
    before = repr(manifest)
    default_job(manifest)
    assert repr(manifest) == before
