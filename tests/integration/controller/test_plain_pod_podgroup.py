"""A plain pod's PodGroup goes Pending → Running in one status write (issue #15, item 2), on real
PostgreSQL and the simulator over HTTP.

The controller gives a plain pod that asks for `volcano` a PodGroup of its own; the scheduler
admits and places the gang in one cycle (an enqueue and a placement, one after the other). The
PodGroup is then written once, Running with the Scheduled condition, as Volcano's scheduler
writes it once when its session closes: no Inqueue in between, as a watch on the PodGroup (what
a user's `kubectl get podgroup -w` shows) sees it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio import client
from sqlalchemy.ext.asyncio import AsyncEngine

from shared.kube.client import request, stream_lines
from shared.messages import decisions as msg
from tests.integration.controller.conftest import controller, decision
from tests.integration.decision_fixtures import new_plain_pod
from tests.waiting import until

pytestmark = pytest.mark.integration
PODS = "/api/v1/namespaces/default/pods"


async def test_a_plain_pods_podgroup_goes_from_pending_straight_to_running(
    leading: AsyncEngine, api: client.ApiClient
) -> None:
    dispatcher = controller(leading, api)
    pod = await new_plain_pod(api, "plain-0")
    await dispatcher.observe("Pod", pod, deleted=False)  # as the watch delivers it
    name = f"podgroup-{pod['metadata']['uid']}"
    podgroup = await until(lambda: dispatcher.cache.get("PodGroup", ("default", name)), "its PodGroup")
    await until(lambda: dispatcher.cache.pods_in_group("default", name), "the pod annotated with it")
    url = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/{name}"
    served = await request(api, "GET", url)
    phases: list[str] = []  # every status the API server serves from here on, as a watch shows it

    async def watch() -> None:
        path = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"
        query = [("watch", "true"), ("resourceVersion", served["metadata"]["resourceVersion"])]
        async for line in stream_lines(api, path, query, timeout=60):
            changed = line.get("object") or {}
            if changed.get("metadata", {}).get("name") == name:
                phases.append((changed.get("status") or {}).get("phase", ""))

    watching = asyncio.create_task(watch())
    try:
        # One cycle admits and places the gang: two decisions, one after the other.
        bind = msg.PodBinding(uid=pod["metadata"]["uid"], namespace="default", name="plain-0", node="node-0")
        await dispatcher.gangs.decided(decision(msg.GangEnqueued, podgroup))
        await dispatcher.gangs.decided(decision(msg.GangPlaced, podgroup, binds=(bind,)))
        bound = await request(api, "GET", f"{PODS}/plain-0")
        await dispatcher.observe("Pod", bound, deleted=False)  # the bind, as the watch delivers it

        async def running() -> dict[str, Any] | None:
            written = await request(api, "GET", url)
            return written if (written.get("status") or {}).get("phase") == "Running" else None

        written = await until(running, "the PodGroup Running")
        await until(lambda: "Running" in phases, "the watch showing it Running")
    finally:
        watching.cancel()
    # What a user watching the PodGroup sees: Pending, then Running; never Inqueue between.
    assert set(phases) <= {"Pending", "Running"}, phases
    assert [c["type"] for c in written["status"]["conditions"]] == ["Scheduled"]
