"""A queue's allowed namespaces travel from the Queue object to the cycle, through ingest and the
snapshot: a PodGroup from another namespace that got past admission is never enqueued.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from services.scheduler.core import plan_cycle
from services.scheduler.ingest import Ingester
from services.scheduler.snapshot_reader import ShellMemory, read_snapshot
from shared.storage.engine import make_sessions
from shared.volcano.keys import ALLOWED_NAMESPACES
from shared.volcano.queue_access import QUEUE_FORBIDS_NAMESPACE
from tests.integration.scheduler.test_ingest import changed
from tests.unit.scheduler.builders import DEFAULT_CONF

pytestmark = pytest.mark.integration


def podgroup(name: str, namespace: str, version: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "resourceVersion": version,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"minMember": 1, "queue": "team"},
        "status": {"phase": "Pending"},
    }


async def test_a_podgroup_that_slipped_past_admission_is_never_enqueued(engine: AsyncEngine) -> None:
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {
            "name": "team",
            "uid": "uid-team",
            "resourceVersion": "3",
            "annotations": {ALLOWED_NAMESPACES: "team-a"},
        },
        "spec": {"weight": 1},
        "status": {"state": "Open"},
    }
    sessions = make_sessions(engine)
    await Ingester(sessions, scheduler_names=["volcano"]).handle(
        [
            changed("Queue", queue),
            changed("PodGroup", podgroup("intruder", "other", "4")),
            changed("PodGroup", podgroup("welcome", "team-a", "5")),
        ]
    )
    async with sessions() as session, session.begin():
        read = await read_snapshot(session, now=datetime.now(UTC), expire_before=None, memory=ShellMemory())
    [team] = [q for q in read.snapshot.queues if q.name == "team"]
    assert team.annotations == {ALLOWED_NAMESPACES: "team-a"}
    plan = plan_cycle(read.snapshot, DEFAULT_CONF)
    assert plan.enqueued == ("uid-welcome",)
    verdict = plan.verdict_for("uid-intruder")
    assert verdict is not None
    assert verdict.reason == QUEUE_FORBIDS_NAMESPACE
