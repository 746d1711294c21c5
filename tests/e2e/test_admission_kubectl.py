"""Every invalid Volcano manifest the admission unit tests hold, applied with kubectl to `phalanx up`.

The unit tests check the pure rules; this checks what a user sees: the API server calls the real
webhook, which reads the queues from the scheduler's projection in PostgreSQL, and kubectl prints
the refusal. `cases.yaml` next to the manifests gives each one's message and the queues it needs.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import select
from sqlalchemy.ext.asyncio import create_async_engine

from phalanx import stack as stacks
from services.admission.context_loader import CACHE_SECONDS
from shared.storage import tables
from tests.e2e.conftest import kubectl

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
    projected: dict[str, tuple[str, str]] = {}
    for _ in range(300):
        projected = asyncio.run(projected_queues(stack.database_url))
        if all(
            name in projected and projected[name][0] == state and (not parent or projected[name][1] == parent)
            for name, (state, parent) in wanted.items()
        ):
            # The webhook caches what it read from the projection for a moment: outwait that copy.
            time.sleep(CACHE_SECONDS + 0.2)
            return projected
        time.sleep(0.2)
    pytest.fail(f"the projection never held the queues {wanted}; it has {projected}")


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
