"""Every expectation decided on hand-written objects: what a scenario author sees pass or fail."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from phalanx.scenario import judges
from phalanx.scenario.expectations import (
    DeniedExpectation,
    EvictedExpectation,
    JobExpectation,
    ObjectExpectation,
    PodExpectation,
    PodGroupExpectation,
    QueueExpectation,
)

pytestmark = pytest.mark.unit


def job(phase: str | None = "Running", **status: Any) -> dict[str, Any]:
    state = {"state": {"phase": phase}} if phase else {}
    return {
        "kind": "Job",
        "metadata": {"name": "j1", "namespace": "default"},
        "spec": {"minAvailable": 3, "queue": "q1"},
        "status": {**state, **status},
    }


def pod(name: str, phase: str = "Running", node: str | None = "node-1", **labels: str) -> dict:
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "env": [{"name": "VK_TASK_INDEX", "value": name[-1]}]}]
    }
    if node:
        spec["nodeName"] = node
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "labels": {"volcano.sh/job-name": "j1", **labels},
        },
        "spec": spec,
        "status": {"phase": phase},
    }


PODGROUP = {
    "kind": "PodGroup",
    "metadata": {"name": "j2-uid", "namespace": "default"},
    "spec": {"minMember": 3, "queue": "q1"},
    "status": {
        "phase": "Pending",
        "conditions": [
            {
                "type": "Unschedulable",
                "status": "True",
                "reason": "NotEnoughResources",
                "message": "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending",
            },
        ],
    },
}


@pytest.mark.parametrize(
    ("entry", "obj", "problems"),
    [
        ({"name": "j1", "phase": "Running", "running": 3}, job(running=3), []),
        (
            {"name": "j1", "phase": "Running"},
            job("Pending", pending=3),
            [
                "expected phase Running, observed Pending "
                "(running=0 pending=3 succeeded=0 failed=0 retryCount=0)"
            ],
        ),
        ({"name": "j1", "running": 0, "pending": 0}, job(None), []),
        (
            {"name": "j1", "phase": "Pending"},
            job(None),
            [
                "expected phase Pending, observed (absent) "
                "(running=0 pending=0 succeeded=0 failed=0 retryCount=0)"
            ],
        ),
        ({"name": "j1", "retryCount": 1}, job(retryCount=1), []),
        ({"name": "j1", "phase": ["Completing", "Completed"]}, job("Completed"), []),
        (
            {"name": "j1", "fields": {"spec.queue": "q1", "status.minAvailable": {"absent": True}}},
            job(),
            [],
        ),
        ({"name": "j1", "exists": False}, None, []),
        ({"name": "j1", "exists": False}, job(), ["expected it not to exist, observed it exists"]),
        ({"name": "j1", "phase": "Running"}, None, ["expected it to exist, observed none"]),
    ],
    ids=[
        "holds",
        "wrong-phase-with-counts",
        "absent-counters-are-zero",
        "no-phase-is-not-pending",
        "retry-count",
        "phase-any-of",
        "fields",
        "gone",
        "still-there",
        "missing",
    ],
)
def test_jobs(entry: dict, obj: dict | None, problems: list[str]) -> None:
    assert judges.match_job(JobExpectation.model_validate(entry), obj) == problems


@pytest.mark.parametrize(
    ("entry", "holds"),
    [
        (
            {
                "name": "j2-uid",
                "phase": "Pending",
                "condition": {
                    "type": "Unschedulable",
                    "status": "True",
                    "reason": "NotEnoughResources",
                },
                "message": {"contains": "3/3 tasks in gang unschedulable"},
            },
            True,
        ),
        (
            {
                "name": "j2-uid",
                "condition": {"type": "Unschedulable"},
                "message": {"contains": "2/3 tasks"},
            },
            False,
        ),
        ({"name": "j2-uid", "condition": {"type": "Scheduled"}}, False),
        ({"name": "j2-uid", "message": {"contains": "Pending"}}, True),
        ({"name": "j2-uid", "phase": ["Inqueue", "Running"]}, False),
        ({"name": "j2-uid", "fields": {"spec.minMember": 3, "spec.queue": "q1"}}, True),
        ({"name": "j2-uid", "fields": {"spec.minMember": "4"}}, False),
    ],
    ids=[
        "seed-condition",
        "wrong-message",
        "missing-condition",
        "message-alone",
        "phase-any-of-misses",
        "fields",
        "fields-differ",
    ],
)
def test_podgroups(entry: dict, holds: bool) -> None:
    found = judges.match_podgroup(PodGroupExpectation.model_validate(entry), PODGROUP)
    assert (found == []) is holds, found


def test_podgroup_condition_mismatch_shows_what_is_there() -> None:
    entry = PodGroupExpectation.model_validate({"name": "x", "condition": {"type": "Scheduled"}})
    assert judges.match_podgroup(entry, PODGROUP) == [
        "expected a condition type=Scheduled, observed [Unschedulable/True/NotEnoughResources: "
        "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending]"
    ]


@pytest.mark.parametrize(
    ("entry", "files", "problems"),
    [
        (
            {
                "name": "j1-worker-1",
                "phase": "Running",
                "node": "node-1",
                "env": {"VK_TASK_INDEX": "1", "OTHER": {"absent": True}},
            },
            None,
            [],
        ),
        (
            {"name": "j1-worker-1", "env": {"VK_TASK_INDEX": "0"}},
            None,
            ["expected env VK_TASK_INDEX 0, observed 1"],
        ),
        (
            {"name": "j1-worker-1", "env": {"MISSING_VAR": "x"}},
            None,
            ["expected env MISSING_VAR x, observed (absent)"],
        ),
        (
            {"name": "j1-worker-1", "files": {"/etc/volcano/worker.host": "a\nb"}},
            {"/etc/volcano/worker.host": "a\nb"},
            [],
        ),
        (
            {"name": "j1-worker-1", "files": {"/etc/volcano/worker.host": "a\nb\n"}},
            {"/etc/volcano/worker.host": "a\nb"},
            [],
        ),
        (
            {"name": "j1-worker-1", "files": {"/etc/volcano/worker.host": "a\nc"}},
            {"/etc/volcano/worker.host": "a\nb"},
            ["expected file /etc/volcano/worker.host 'a\\nc', observed 'a\\nb'"],
        ),
        (
            {"name": "j1-worker-1", "files": {"/etc/x": {"contains": "b"}}},
            {"/etc/x": None},
            ["expected file /etc/x containing 'b', observed no such file in the pod's volume mounts"],
        ),
        (
            {"name": "j1-worker-1", "phase": ["Pending", "Running"], "node": {"present": True}},
            None,
            [],
        ),
    ],
    ids=[
        "phase-node-env",
        "env-differs",
        "env-missing",
        "file",
        "file-trailing-newline",
        "file-differs",
        "file-unresolvable",
        "phase-any-of",
    ],
)
def test_named_pods(entry: dict, files: dict | None, problems: list[str]) -> None:
    found = judges.match_named_pod(PodExpectation.model_validate(entry), pod("j1-worker-1"), files)
    assert found == problems


def test_counted_pods_count_those_matching_every_field() -> None:
    pods = [
        pod("j1-w-0"),
        pod("j1-w-1", "Pending", None),
        pod("j1-w-2"),
        pod("other-0", app="x") | {"metadata": {"name": "o", "labels": {}}},
    ]

    def counted(count: int, **rest: Any) -> list[str]:
        entry = PodExpectation.model_validate({"selector": "volcano.sh/job-name=j1", "count": count, **rest})
        return judges.match_counted(entry, pods, lambda p: judges.match_pod(entry, p), "pods")

    assert counted(2, phase="Running") == []
    assert counted(0, phase="Succeeded") == []
    assert counted(3) == []
    assert counted(3, phase="Running") == [
        "expected 3 pods matching, observed 2 of 3 selected (Pending=1 Running=2)"
    ]


def test_counted_objects_name_the_first_difference() -> None:
    entry = ObjectExpectation.model_validate(
        {
            "kind": "Pod",
            "selector": "volcano.sh/job-name=j1",
            "count": 2,
            "fields": {"spec.nodeName": "node-1"},
        }
    )
    pods = [pod("j1-w-0", node="node-2"), pod("j1-w-1")]
    assert judges.match_counted(entry, pods, lambda o: judges.match_fields(entry.fields, o)) == [
        "expected 2 objects matching, observed 1 of 2 selected; first differs: expected "
        "spec.nodeName node-1, observed node-2"
    ]


def test_secret_data_is_compared_decoded() -> None:
    secret = {
        "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {"token": base64.b64encode(b"hello").decode()},
    }
    entry = ObjectExpectation.model_validate(
        {"kind": "Secret", "name": "s", "fields": {"data.token": "hello"}}
    )
    assert judges.match_object(entry, secret) == []


@pytest.mark.parametrize(
    ("entry", "queue", "holds"),
    [
        ({"name": "q1", "state": "Closed"}, {"status": {"state": "Closed"}}, True),
        ({"name": "q1", "state": ["Closing", "Closed"]}, {"status": {"state": "Closing"}}, True),
        ({"name": "q1", "state": "Open"}, {"status": {}}, False),
        (
            {"name": "q1", "fields": {"spec.capability.cpu": "4000m"}},
            {"spec": {"capability": {"cpu": "4"}}},
            True,
        ),
        ({"name": "q1", "exists": False}, None, True),
    ],
    ids=["state", "state-any-of", "no-state", "capability-by-value", "gone"],
)
def test_queues(entry: dict, queue: dict | None, holds: bool) -> None:
    assert (judges.match_queue(QueueExpectation.model_validate(entry), queue) == []) is holds


@pytest.mark.parametrize(
    ("first_at", "second_at", "holds"),
    [
        (1.0, 2.0, True),
        (1.0, None, True),
        (2.0, 1.0, False),
        (None, None, False),
        (None, 1.0, False),
        (1.0, 1.0, False),
    ],
    ids=["earlier", "second-never", "later", "neither", "first-never", "same-moment"],
)
def test_started_before(first_at: float | None, second_at: float | None, holds: bool) -> None:
    found = judges.match_started_before("default/a", "default/b", first_at, second_at)
    assert (found == []) is holds


EVICTED = [
    pod("j1-worker-0", **{"volcano.sh/task-spec": "worker"}),
    pod("j1-ps-0", **{"volcano.sh/task-spec": "ps"}),
]


@pytest.mark.parametrize(
    ("entry", "problems"),
    [
        ({"job": "j1", "count": 2}, []),
        ({"job": "j1", "task": "ps", "count": 1}, []),
        ({"job": "j1", "count": 1}, ["expected 1 evicted, observed 2 (j1-ps-0, j1-worker-0)"]),
        ({"job": "j2", "count": 0}, []),
        ({"job": "j2"}, ["expected at least one evicted pod, observed none"]),
        ({"name": "j1-ps-0"}, []),
        ({"namespace": "other", "job": "j1", "count": 0}, []),
        ({"selector": "volcano.sh/task-spec in (ps,worker)", "count": 2}, []),
    ],
    ids=[
        "by-job",
        "by-task",
        "wrong-count",
        "none-of-other-job",
        "at-least-one",
        "by-name",
        "other-namespace",
        "by-selector",
    ],
)
def test_evicted(entry: dict, problems: list[str]) -> None:
    assert judges.match_evicted(EvictedExpectation.model_validate(entry), EVICTED) == problems


@pytest.mark.parametrize(
    ("previous", "current", "recreated", "holds"),
    [
        ("uid-a", pod("a"), False, True),
        ("uid-old", pod("a"), True, True),
        ("uid-a", pod("a"), True, False),
        ("uid-old", pod("a"), False, False),
        (None, pod("a"), True, False),
        ("uid-a", None, False, False),
    ],
    ids=["same-object", "new-object", "not-recreated", "was-recreated", "no-previous", "gone"],
)
def test_recreated(previous: str | None, current: dict | None, recreated: bool, holds: bool) -> None:
    found = judges.match_recreated(previous, current, recreated=recreated)
    assert (found == []) is holds, found


@pytest.mark.parametrize(
    ("nodes", "same", "holds"),
    [
        (["node-1", "node-1"], True, True),
        (["node-1", "node-2"], True, False),
        (["node-1", "node-2"], False, True),
        (["node-1", "node-1", "node-2"], False, False),
        (["node-1", None], False, False),
    ],
    ids=["same", "not-same", "distinct", "not-distinct", "unbound"],
)
def test_placement(nodes: list[str | None], same: bool, holds: bool) -> None:
    pods = {f"default/p{i}": pod(f"p{i}", node=n) for i, n in enumerate(nodes)}
    assert (judges.match_nodes(pods, same=same) == []) is holds


def test_placement_needs_every_pod() -> None:
    assert judges.match_nodes({"default/a": pod("a"), "default/b": None}, same=True) == [
        "expected pods to exist, observed none for default/b"
    ]


@pytest.mark.parametrize(
    ("refusal", "step", "holds"),
    [
        (
            "Job j1: admission webhook denied the request: duplicated task name worker",
            "apply",
            True,
        ),
        ("Job j1: some other reason", "apply", False),
        (None, "apply", False),
        (None, None, False),
    ],
    ids=["refused-with-phrase", "refused-otherwise", "accepted", "no-write-before"],
)
def test_denied(refusal: str | None, step: str | None, holds: bool) -> None:
    entry = DeniedExpectation.model_validate({"containsAny": ["duplicated task name", "x y"]})
    assert (judges.match_denied(entry, refusal, step) == []) is holds
