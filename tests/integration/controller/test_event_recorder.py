"""Events through the simulated API server: a repeat counts up on one Event, as `kubectl` shows it.

The recorder (services/controller/event_recorder.py) writes a new Event the first time and a
merge patch of `count` and `lastTimestamp` for each repeat; the simulator stores core/v1 Events
and serves them to a field-selected list, which is what `kubectl describe` reads.
"""

from __future__ import annotations

import pytest

from services.controller.event_recorder import EventRecorder
from services.simulator.testing import running_simulator
from shared.kube.client import make_api_client, request
from shared.kube.kinds import KINDS

pytestmark = pytest.mark.integration

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "default", "name": "p-0", "uid": "u-0"}}


async def test_a_repeated_event_is_one_event_counted_and_another_message_is_another() -> None:
    with running_simulator() as simulator:
        api = await make_api_client(str(simulator.kubeconfig_path))
        try:
            recorder = EventRecorder(api)
            for _ in range(3):
                await recorder.record(
                    POD, type_="Warning", reason="FailedScheduling", message="0/4 nodes", component="volcano"
                )
            await recorder.record(
                POD, type_="Warning", reason="FailedScheduling", message="0/5 nodes", component="volcano"
            )
            listed = await request(
                api,
                "GET",
                KINDS["Event"].collection("default"),
                query=[("fieldSelector", "involvedObject.name=p-0")],
            )
        finally:
            await api.close()

    counts = {e["message"]: e["count"] for e in listed["items"]}
    assert counts == {"0/4 nodes": 3, "0/5 nodes": 1}
    assert all(e["source"]["component"] == "volcano" for e in listed["items"])
