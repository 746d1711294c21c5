"""Issue #14, item 6, on `phalanx up`: a Job's literal env value reaches its pods and nothing else.

The Job is created through kubectl with a secret-looking env value. Its pods run with the value
(the controller read the Job's template from the API), while no message on any stream (CLUSTER
above all, read directly from NATS) and no service's log holds it.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from pathlib import Path

import nats
import pytest
import yaml

from phalanx import stack as stacks
from shared.config import NatsSettings
from shared.messages import subjects
from tests.e2e.conftest import kubectl
from tests.e2e.test_poison import RUN, job, wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        shutil.which("kubectl") is None, reason="kubectl (Debian: kubernetes-client) not installed"
    ),
]


def secret_task(secret: str) -> dict[str, object]:
    container = {
        "name": "main",
        "image": "busybox",
        "env": [
            {"name": "API_TOKEN", "value": secret},
            {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
        ],
        "resources": {"requests": {"cpu": "100m"}},
    }
    return {
        "name": "worker",
        "replicas": 2,
        "template": {
            "metadata": {"annotations": RUN},
            "spec": {"restartPolicy": "Never", "containers": [container]},
        },
    }


async def messages_holding(nats_url: str, needle: bytes) -> list[str]:
    """Every message on every stream whose subject or body holds `needle`, as `stream:subject`."""
    client = await nats.connect(NatsSettings(url=nats_url).servers)  # one URL, or a cluster's
    found: list[str] = []
    try:
        stream_api = client.jetstream()
        for stream in subjects.STREAM_SUBJECTS:
            state = (await stream_api.stream_info(stream)).state
            for sequence in range(max(state.first_seq, 1), state.last_seq + 1):
                try:
                    message = await stream_api.get_msg(stream, sequence)
                except nats.js.errors.NotFoundError:
                    continue  # deleted or aged out
                if needle in (message.data or b"") or needle in message.subject.encode():
                    found.append(f"{stream}:{message.subject}")
    finally:
        await client.close()
    return found


@pytest.mark.timeout(300)
def test_a_jobs_env_value_reaches_its_pods_but_no_stream_or_log(stack: stacks.Stack) -> None:
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    manifest = job("secret-env", [secret_task(secret)], minAvailable=2)
    made = kubectl(stack, "create", "-f", "-", stdin=yaml.safe_dump(manifest))
    assert made.returncode == 0, made.stderr

    phase_of = ["get", "vcjob", "secret-env", "-o", "jsonpath={.status.state.phase}"]
    assert wait_for(stack, phase_of, "Completed") == "Completed"
    env_of = [
        "get", "pods", "-l", "volcano.sh/job-name=secret-env",
        "-o", "jsonpath={.items[*].spec.containers[0].env[0].value}",
    ]  # fmt: skip
    assert kubectl(stack, *env_of).stdout.split() == [secret, secret]
    ref_of = ["get", "pod", "secret-env-worker-0", "-o", "jsonpath={.spec.containers[0].env[1].valueFrom}"]
    assert "creds" in kubectl(stack, *ref_of).stdout

    # The Job and its pods were published (the watcher saw them), yet the value is nowhere.
    published = asyncio.run(messages_holding(stack.nats_url, b"secret-env"))
    assert any(where.startswith("CLUSTER:cluster.job.") for where in published)
    assert any(where.startswith("CLUSTER:cluster.pod.") for where in published)
    assert asyncio.run(messages_holding(stack.nats_url, secret.encode())) == []
    for process in stack.processes:
        if process.name != "simulator":  # the simulated API server is the cluster itself
            assert secret not in Path(process.log_path).read_text(errors="replace"), process.name
