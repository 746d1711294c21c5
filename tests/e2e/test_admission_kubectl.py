"""Admission as a kubectl user meets it, on `phalanx up`.

Every invalid Volcano manifest the admission unit tests hold is applied with kubectl: the API
server calls the real webhook, which reads the queues from the scheduler's projection in
PostgreSQL (and a Job's queue from the API server), and kubectl prints the refusal — Volcano's
message, then each cause's field. `cases.yaml` next to the manifests gives each one's message and
the queues it needs. A queue closed a moment ago refuses the next Job, and kubectl keeps working
while the webhook rotates its certificates and CA under it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from sqlalchemy import select
from sqlalchemy.ext.asyncio import create_async_engine

from phalanx import stack as stacks
from services.admission.context_loader import CACHE_SECONDS
from shared.storage import tables
from tests.e2e.conftest import kubectl
from tests.waiting import eventually

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        shutil.which("kubectl") is None, reason="kubectl (Debian: kubernetes-client) not installed"
    ),
]
INVALID = Path(__file__).parents[1] / "unit" / "admission" / "data" / "invalid"
CASES: dict[str, Any] = yaml.safe_load((INVALID / "cases.yaml").read_text())
KIND_RESOURCES = {"Job": "vcjob", "Queue": "queue", "PodGroup": "podgroup"}
VALID_JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: defaulted-by-admission}
spec:
  minAvailable: 1
  tasks:
    - name: worker
      replicas: 1
      template: {spec: {containers: [{name: main, image: busybox}]}}
"""


def queue_manifest(name: str, parent: str | None) -> str:
    spec: dict[str, Any] = {"weight": 1}
    if parent:
        spec["parent"] = parent
    return yaml.safe_dump(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": spec,
        }
    )


def close_command(name: str) -> str:
    # Queue state is status, owned by the controller: a user closes a queue with a bus Command.
    return yaml.safe_dump(
        {
            "apiVersion": "bus.volcano.sh/v1alpha1",
            "kind": "Command",
            "metadata": {"name": f"close-{name}", "namespace": "default"},
            "action": "CloseQueue",
            "target": {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "name": name},
        }
    )


async def projected_queues(database_url: str) -> dict[str, tuple[str, str]]:
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            rows = await connection.execute(
                select(tables.Queue.name, tables.Queue.state, tables.Queue.parent).where(
                    tables.Queue.deleted.is_(False)
                )
            )
            return {name: (state or "Open", parent or "") for name, state, parent in rows}
    finally:
        await engine.dispose()


@pytest.fixture(scope="module")
def cluster_queues(stack: stacks.Stack) -> dict[str, tuple[str, str]]:
    """The queues `cases.yaml` asks for, created as a user would and awaited in the projection.

    The webhook reads queue state and hierarchy from the scheduler's projection, so a case run
    before the projection catches up would be refused (or accepted) for the wrong reason.
    """
    # `root` is implicit here: no case needs it stored (a queue without a parent hangs under it).
    wanted = {q["name"]: (q["state"], q.get("parent", "")) for q in CASES["queues"] if q["name"] != "root"}
    for name, (_, parent) in wanted.items():
        if name == "default":
            continue  # made by the controller at start
        applied = kubectl(stack, "apply", "-f", "-", stdin=queue_manifest(name, parent or None))
        assert applied.returncode == 0, applied.stderr
    for name, (state, _) in wanted.items():
        if state == "Closed":
            applied = kubectl(stack, "apply", "-f", "-", stdin=close_command(name))
            assert applied.returncode == 0, applied.stderr

    def caught_up() -> dict[str, tuple[str, str]] | None:
        projected = asyncio.run(projected_queues(stack.database_url))
        held = all(
            name in projected and projected[name][0] == state and (not parent or projected[name][1] == parent)
            for name, (state, parent) in wanted.items()
        )
        return projected if held else None

    projected = eventually(caught_up, f"the projection holding the queues {wanted}", within=60, every=0.2)
    assert projected is not None
    # The webhook caches what it read from the projection for a moment: outwait that copy.
    time.sleep(CACHE_SECONDS + 0.2)
    return projected


@pytest.mark.parametrize("name", sorted(CASES["cases"]), ids=lambda n: n.removesuffix(".yaml"))
def test_an_invalid_manifest_is_refused_with_volcanos_message(
    stack: stacks.Stack, cluster_queues: dict[str, tuple[str, str]], name: str
) -> None:
    manifest = (INVALID / name).read_text()
    refused = kubectl(stack, "apply", "-f", "-", stdin=manifest)
    assert refused.returncode != 0, (
        f"{refused.stdout} while the projection holds {asyncio.run(projected_queues(stack.database_url))}"
    )
    assert "denied the request" in refused.stderr
    assert CASES["cases"][name]["message"] in refused.stderr
    # kubectl prints only the Status message: it names every field at fault after Volcano's text.
    causes = refused.stderr.partition("\ncauses:\n")[2]
    assert [line.split(" (")[0].strip() for line in causes.splitlines() if line.strip()] == (
        CASES["cases"][name]["fields"]
    )
    obj = yaml.safe_load(manifest)
    got = kubectl(stack, "get", KIND_RESOURCES[obj["kind"]], obj["metadata"]["name"], "-o", "name")
    assert got.returncode != 0, "nothing refused is stored"
    assert "NotFound" in got.stderr


def test_a_valid_job_is_accepted_and_defaulted(stack: stacks.Stack) -> None:
    applied = kubectl(stack, "apply", "-f", "-", stdin=VALID_JOB)
    assert applied.returncode == 0, applied.stderr
    stored = json.loads(kubectl(stack, "get", "vcjob", "defaulted-by-admission", "-o", "json").stdout)
    assert stored["spec"]["queue"] == "default"
    assert stored["spec"]["schedulerName"] == "volcano"
    assert stored["spec"]["maxRetry"] == 3
    assert kubectl(stack, "delete", "vcjob", "defaulted-by-admission").returncode == 0


def queue_state(stack: stacks.Stack, name: str) -> str:
    got = kubectl(stack, "get", "queue", name, "-o", "jsonpath={.status.state}")
    return got.stdout.strip() if got.returncode == 0 else ""


def job_in(queue: str, name: str, *, valid: bool = True) -> str:
    task = {"replicas": 1, "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}}
    tasks = [{"name": "worker", **task}] + ([] if valid else [{"name": "worker", **task}])
    return yaml.safe_dump(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": 1, "queue": queue, "tasks": tasks},
        }
    )


def api_call(stack: stacks.Stack, method: str, path: str, body: str | None = None) -> tuple[int, str]:
    """One request to the cluster's API server, as fast as a client can make it (no kubectl start-up)."""
    data = json.dumps(yaml.safe_load(body)).encode() if body else None
    call = urllib.request.Request(
        stack.simulator_url + path,
        data=data,
        method=method,
        headers={"Content-Type": "application/json", "Authorization": "Bearer simulator"},
    )
    try:
        with urllib.request.urlopen(call, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_job_right_after_its_queue_closed_is_refused(stack: stacks.Stack) -> None:
    name = "closing-now"
    queue_path = f"/apis/scheduling.volcano.sh/v1beta1/queues/{name}"
    jobs_path = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"

    def state() -> str:
        status, body = api_call(stack, "GET", queue_path)
        return str((json.loads(body).get("status") or {}).get("state", "")) if status == 200 else ""

    assert kubectl(stack, "apply", "-f", "-", stdin=queue_manifest(name, None)).returncode == 0
    eventually(lambda: state() == "Open", "the controller opening the queue", within=30, every=0.1)
    assert kubectl(stack, "apply", "-f", "-", stdin=close_command(name)).returncode == 0

    def closed() -> bool:
        if state() == "Closed":
            return True
        # Refused for another reason, each keeps the webhook's view of the queue fresh in its cache,
        # so the Job below meets a cache that may still say Open: only an exact read refuses it.
        _, body = api_call(stack, "POST", jobs_path, job_in(name, "warm-up", valid=False))
        if "duplicated task name worker" not in body:
            raise RuntimeError(f"the warm-up Job was not refused for its task names: {body}")
        return False

    eventually(closed, "the controller closing the queue", within=30)
    status, body = api_call(stack, "POST", jobs_path, job_in(name, "too-late"))
    assert status >= 400, body
    assert f"can only submit job to queue with state `Open`, queue `{name}` status is `Closed`" in body
    assert kubectl(stack, "get", "vcjob", "too-late").returncode != 0, "nothing refused is stored"


def served_certificate(port: int, ca_bundle: bytes) -> x509.Certificate:
    """A new TLS handshake with the webhook, verified as the API server would: with its caBundle."""
    context = ssl.create_default_context(cadata=ca_bundle.decode())
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def published_bundle(stack: stacks.Stack) -> bytes:
    got = kubectl(stack, "get", "validatingwebhookconfiguration", "phalanx-admission", "-o", "json")
    config = json.loads(got.stdout)
    return base64.b64decode(config["webhooks"][0]["clientConfig"]["caBundle"])


@pytest.fixture
def rotating_admission(stack: stacks.Stack) -> Iterator[int]:
    """The stack's webhook restarted with certificates that last seconds; put back afterwards.
    Every replica on a scaled stack: they share one Secret, and all serve on the one port."""
    replicas = stack.replicas("admission")
    saved = {replica.name: dict(replica.env) for replica in replicas}
    stacks.stop_processes(replicas)
    for replica in replicas:
        replica.env |= {
            "ADMISSION_CERT_DIR": str(Path(stack.state_dir) / f"{replica.name}-certs-rotating"),
            # A Secret of their own: the stack's holds certificates of months, which a shorter
            # policy keeps serving until they fall due.
            "ADMISSION_CERT_SECRET": "phalanx-admission-tls-rotating",
            "ADMISSION_CERT_VALIDITY_SECONDS": "5",
            "ADMISSION_CA_VALIDITY_SECONDS": "8",
            "ADMISSION_CERT_RENEW_BEFORE_SECONDS": "3",
        }
        stacks.restart(stack, replica.name, kill=False)
    try:
        yield int(saved["admission"]["ADMISSION_PORT"])
    finally:
        rotating = stack.replicas("admission")
        stacks.stop_processes(rotating)
        for replica in rotating:
            replica.env = saved[replica.name]
            stacks.restart(stack, replica.name, kill=False)


def test_kubectl_keeps_working_while_the_webhook_rotates_its_certificates(
    stack: stacks.Stack, rotating_admission: int
) -> None:
    serving: set[int] = set()
    issuers: set[str] = set()
    deadline = time.monotonic() + 12
    index = 0
    while time.monotonic() < deadline:
        index += 1
        manifest = yaml.safe_load(queue_manifest(f"rotation-{index}", None))
        manifest["metadata"]["labels"] = {"test": "rotation"}
        applied = kubectl(stack, "apply", "-f", "-", stdin=yaml.safe_dump(manifest))
        assert applied.returncode == 0, applied.stderr  # both webhooks answered over TLS
        cert = served_certificate(rotating_admission, published_bundle(stack))
        serving.add(cert.serial_number)
        issuers.add(cert.issuer.rfc4514_string())
    assert len(serving) >= 3, "the serving certificate was renewed while kubectl kept working"
    assert len(issuers) >= 2, "the CA was renewed while kubectl kept working"
    deleted = kubectl(stack, "delete", "queue", "-l", "test=rotation")
    assert deleted.returncode == 0, deleted.stderr
