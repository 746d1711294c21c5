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
from tests.e2e.fuzz_objects import Case, cases, encode

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


def post(api: client.ApiClient, case: Case) -> tuple[int, dict[str, Any]]:
    """POST the case's body as it is (the client's own encoder would refuse the deep ones)."""
    configuration = api.configuration
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    auth = configuration.auth_settings().get("BearerToken")
    if auth and auth.get("value"):
        headers[auth["key"]] = auth["value"]
    answer = api.rest_client.pool_manager.request(
        "POST", configuration.host + COLLECTIONS[case.kind], body=encode(case), headers=headers, timeout=30
    )
    try:
        status = json.loads(answer.data)
    except ValueError:
        status = {"message": answer.data[:500].decode(errors="replace")}
    return answer.status, status


@pytest.mark.timeout(900)
def test_malformed_objects_are_refused_fast_and_clearly_while_a_valid_job_completes(
    stack: stacks.Stack, api: client.ApiClient
) -> None:
    submitted = kubectl(stack, "apply", "-f", "-", stdin=yaml.safe_dump(VALID_JOB))
    assert submitted.returncode == 0, submitted.stderr

    accepted: list[Case] = []
    problems: list[str] = []
    for case in cases(SEED, COUNT):
        started = time.monotonic()
        status, body = post(api, case)
        took = time.monotonic() - started
        message = str(body.get("message") or "")
        where = f"{case.kind} {case.name[:40]!r} broken by {case.broken}: {status} {message[:300]!r}"
        if status < 300:
            accepted.append(case)
            if not case.may_pass:
                problems.append(f"accepted: {where}")
            continue
        if status >= 500:
            problems.append(f"server error: {where}")
        elif not any(expected in message for expected in case.expect):
            problems.append(f"refusal names none of {case.expect}: {where}")
        if took > 1.0:
            problems.append(f"refused after {took:.2f}s: {where}")
        if len(message) > 10_000:
            problems.append(f"refusal of {len(message)} characters: {where}")
    assert not problems, "\n".join(problems)

    phase = ""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and phase != "Completed":
        phase = kubectl(stack, "get", "vcjob", "steady-job", "-o", "jsonpath={.status.state.phase}").stdout
        time.sleep(0.5)
    assert phase == "Completed"
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
