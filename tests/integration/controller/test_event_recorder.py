"""Events through the simulated API server: a repeat counts up on one Event, as `kubectl` shows it,
and queued Events are written behind the caller's back, or dropped and counted when too many wait.

The recorder (services/controller/event_recorder.py) writes a new Event the first time and a
merge patch of `count` and `lastTimestamp` for each repeat; the simulator stores core/v1 Events
and serves them to a field-selected list, which is what `kubectl describe` reads.
"""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from services.controller.event_recorder import EventRecorder
from shared.kube.client import make_api_client, request
from shared.kube.kinds import KINDS
from tests.simulator_thread import running_simulator

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


def dropped() -> float:
    labels = {"reason": "queue_full"}
    return REGISTRY.get_sample_value("phalanx_controller_events_dropped_total", labels) or 0.0


def pod(number: int) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "default", "name": f"q-{number}", "uid": f"q-{number}"},
    }


async def test_queued_events_are_written_after_the_call_and_a_full_queue_drops_and_counts() -> None:
    """`soon` returns before anything is written (a bind never waits for its Event); past the
    queue's bound an Event is dropped and counted, as client-go's broadcaster drops it."""
    with running_simulator() as simulator:
        api = await make_api_client(str(simulator.kubeconfig_path))
        try:
            recorder = EventRecorder(api, max_queued=3, writers=1)
            before = dropped()
            for number in range(5):
                recorder.soon(
                    pod(number),
                    type_="Normal",
                    reason="Scheduled",
                    message=f"Successfully assigned default/q-{number} to n-{number}",
                    component="volcano",
                )
            assert dropped() - before == 2
            await recorder.flush()
            listed = await request(
                api,
                "GET",
                KINDS["Event"].collection("default"),
                query=[("fieldSelector", "reason=Scheduled")],
            )
            await recorder.close()
        finally:
            await api.close()

    written = sorted((e["involvedObject"]["name"], e["message"]) for e in listed["items"])
    assert written == [(f"q-{n}", f"Successfully assigned default/q-{n} to n-{n}") for n in range(3)]
