"""Which waiting pods get a FailedScheduling Event, on the simulator over HTTP (issue #15).

As in Volcano, a gang that waits for room gives each waiting pod a FailedScheduling Event; a
gang not valid yet (fewer pods created than its minimum) is left out of the session there, and
only its PodGroup says why, so a Job's pods do not each get an Event every time one more of them
is created.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio import client
from sqlalchemy.ext.asyncio import AsyncEngine

from services.controller.gangs import GangKeeper
from shared.kube.client import request
from shared.messages import decisions as msg
from shared.messages.envelope import CloudEvent, new_event
from shared.volcano.keys import GROUP_NAME as GROUP_ANNOTATION
from tests.integration.faults.test_decision_authority import LEADING_EPOCH, keeper
from tests.waiting import until

pytestmark = pytest.mark.integration
__all__ = ["keeper"]  # the fixture, used by name


async def waiting_pod(api: client.ApiClient, keeper: GangKeeper, name: str, group: str) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": {GROUP_ANNOTATION: group}},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "busybox"}]},
    }
    created = await request(api, "POST", "/api/v1/namespaces/default/pods", body=body)
    keeper._cache.put("Pod", created)


def unschedulable(group: str, condition_reason: str, message: str) -> CloudEvent[Any]:
    return new_event(
        msg.GangUnschedulable(
            epoch=LEADING_EPOCH,
            cycle=1,
            gang_uid=f"uid-{group}",
            namespace="default",
            podgroup=group,
            reason=condition_reason,
            condition_reason=condition_reason,
            message=message,
        ),
        source="test",
    )


async def failed_scheduling(api: client.ApiClient) -> dict[str, str]:
    listed = await request(api, "GET", "/api/v1/namespaces/default/events")
    return {
        e["involvedObject"]["name"]: e["message"]
        for e in listed.get("items") or []
        if e.get("reason") == "FailedScheduling"
    }


async def test_only_a_valid_gang_waiting_for_room_gives_its_pods_failed_scheduling(
    api: client.ApiClient, engine: AsyncEngine, keeper: GangKeeper
) -> None:
    await waiting_pod(api, keeper, "full-0", "full")
    await waiting_pod(api, keeper, "partial-0", "partial")
    await keeper.decided(unschedulable("full", "NotEnoughResources", "1/1 tasks in gang unschedulable"))
    await keeper.decided(
        unschedulable(
            "partial", "NotEnoughTasks", "Not enough valid tasks for gang-scheduling, valid: 1, min: 4"
        )
    )
    await until(lambda: failed_scheduling(api), "a FailedScheduling event")  # written in the background
    await asyncio.sleep(0.3)
    assert await failed_scheduling(api) == {"full-0": "1/1 tasks in gang unschedulable"}
