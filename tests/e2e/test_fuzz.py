"""The fuzz tier: seeded malformed and extreme objects sent through the API while a valid job runs.

Every object from `fuzz_objects.cases` is POSTed with the official Kubernetes client to the whole
stack (`phalanx up`: the simulated API server, its webhooks, the services behind the watch). Each
refusal must come within a second, as a 4xx Status (never a 500) whose message names the broken
field or rule; no service may die; the valid job submitted before them must complete.

The short run here has PHALANX_FUZZ_CASES cases (default 40) from PHALANX_FUZZ_SEED (default
1); the long run is the same test with more, e.g.
`PHALANX_FUZZ_CASES=2000 PHALANX_FUZZ_SEED=7 .venv/bin/pytest tests/e2e/test_fuzz.py --timeout 3600`.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from phalanx import stack as stacks
from tests.e2e.conftest import kubectl
from tests.e2e.fuzz_objects import UPDATE_KINDS, Case, base, cases, encode, update_cases
from tests.waiting import eventually

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        shutil.which("kubectl") is None, reason="kubectl (Debian: kubernetes-client) not installed"
    ),
]
SEED = int(os.environ.get("PHALANX_FUZZ_SEED", "1"))
COUNT = int(os.environ.get("PHALANX_FUZZ_CASES", "40"))
COLLECTIONS = {
    "Job": "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs",
    "PodGroup": "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups",
    "Queue": "/apis/scheduling.volcano.sh/v1beta1/queues",
    "Command": "/apis/bus.volcano.sh/v1alpha1/namespaces/default/commands",
    "Pod": "/api/v1/namespaces/default/pods",
}
VALID_JOB = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "steady-job", "namespace": "default"},
    "spec": {
        "minAvailable": 2,
        "tasks": [
            {
                "name": "worker",
                "replicas": 2,
                "template": {
                    "metadata": {"annotations": {"simulator.phalanx/run-seconds": "5"}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "500m"}}}
                        ],
                    },
                },
            }
        ],
    },
}


@pytest.fixture(scope="module")
def api(stack: stacks.Stack) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(stack.kubeconfig)
    yield api_client
    api_client.close()


def post(api: client.ApiClient, case: Case, *, patch: bool = False) -> tuple[int, dict[str, Any]]:
    """POST the case's body as it is (the client's own encoder would refuse the deep ones), or
    PATCH its spec onto the existing object of its name."""
    configuration = api.configuration
    content_type = "application/merge-patch+json" if patch else "application/json"
    headers = {"Content-Type": content_type, "Accept": "application/json"}
    auth = configuration.auth_settings().get("BearerToken")
    if auth and auth.get("value"):
        headers[auth["key"]] = auth["value"]
    url = configuration.host + COLLECTIONS[case.kind]
    body = encode(case)
    if patch:
        url, body = f"{url}/{case.name}", json.dumps({"spec": case.obj["spec"]}).encode()
    answer = api.rest_client.pool_manager.request(
        "PATCH" if patch else "POST", url, body=body, headers=headers, timeout=30
    )
    try:
        status = json.loads(answer.data)
    except ValueError:
        status = {"message": answer.data[:500].decode(errors="replace")}
    return answer.status, status


def send(api: client.ApiClient, case: Case, *, patch: bool = False) -> tuple[int, str, float]:
    started = time.monotonic()
    status, body = post(api, case, patch=patch)
    return status, str(body.get("message") or ""), time.monotonic() - started


def judged(case: Case, status: int, message: str, took: float) -> list[str]:
    """What is wrong with the answer to `case`: nothing, for a fast, clear 4xx refusal."""
    where = f"{case.kind} {case.name[:40]!r} broken by {case.broken}: {status} {message[:300]!r}"
    if status < 300:
        return [] if case.may_pass else [f"accepted: {where}"]
    problems = []
    if status >= 500:
        problems.append(f"server error: {where}")
    elif not any(expected in message for expected in case.expect):
        problems.append(f"refusal names none of {case.expect}: {where}")
    if took > 1.0:
        problems.append(f"refused after {took:.2f}s: {where}")
    if len(message) > 10_000:
        problems.append(f"refusal of {len(message)} characters: {where}")
    return problems


@pytest.mark.timeout(900)
def test_malformed_objects_are_refused_fast_and_clearly_while_a_valid_job_completes(
    stack: stacks.Stack, api: client.ApiClient
) -> None:
    submitted = kubectl(stack, "apply", "-f", "-", stdin=yaml.safe_dump(VALID_JOB))
    assert submitted.returncode == 0, submitted.stderr

    accepted: list[Case] = []
    problems: list[str] = []
    for case in cases(SEED, COUNT):
        status, message, took = send(api, case)
        if status < 300:
            accepted.append(case)
        problems += judged(case, status, message, took)
    assert not problems, "\n".join(problems)

    def steady_job_phase() -> str:
        return kubectl(stack, "get", "vcjob", "steady-job", "-o", "jsonpath={.status.state.phase}").stdout

    eventually(lambda: steady_job_phase() == "Completed", "steady-job Completed", within=180, every=0.5)
    for process in stack.processes:
        os.kill(process.pid, 0)  # raises if the service died
    for case in accepted:  # leave the stack as other tests expect it
        resource = {
            "Job": "vcjob",
            "PodGroup": "podgroup",
            "Queue": "queue",
            "Command": "command",
            "Pod": "pod",
        }
        kubectl(stack, "delete", resource[case.kind], case.name, "--wait=false")


@pytest.mark.timeout(600)
def test_hostile_updates_are_refused_fast_and_clearly(stack: stacks.Stack, api: client.ApiClient) -> None:
    names = {kind: f"fuzz-update-{kind.lower()}" for kind in UPDATE_KINDS}
    resources = {kind: {"Job": "vcjob"}.get(kind, kind.lower()) for kind in UPDATE_KINDS}

    def spec_of(kind: str) -> Any:
        shown = kubectl(stack, "get", resources[kind], names[kind], "-o", "json")
        assert shown.returncode == 0, shown.stderr
        return json.loads(shown.stdout)["spec"]

    for kind, name in names.items():
        made = kubectl(stack, "create", "-f", "-", stdin=json.dumps(base(kind, name)))
        assert made.returncode == 0, made.stderr
    # The controller gives a queue without a parent `root` (Volcano's queue controller does the
    # same): wait for that write, so that only the hostile updates could change a spec from here.
    eventually(lambda: spec_of("Queue").get("parent") == "root", "the queue given its parent", within=60)
    before = {kind: spec_of(kind) for kind in UPDATE_KINDS}
    problems: list[str] = []
    for case in update_cases(SEED, COUNT, names):
        status, message, took = send(api, case, patch=True)
        problems += judged(case, status, message, took)
    assert not problems, "\n".join(problems)
    assert {kind: spec_of(kind) for kind in UPDATE_KINDS} == before  # no hostile value was stored
    for kind, name in names.items():
        kubectl(stack, "delete", resources[kind], name, "--wait=false")
