"""The watcher's translation: which objects leave the cluster, under which subject and event id, and
how an object too large for the bus still reaches it, smaller, under the same identity."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from services.watcher.translate import is_relevant, to_message, view_of

pytestmark = pytest.mark.unit

SCHEDULERS = ("volcano",)
LIMIT = 64 * 1024


def pod(
    name: str = "p-0", *, scheduler: str = "volcano", node: str | None = None, **annotations: str
) -> dict:
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    metadata = {"name": name, "namespace": "team.a", "uid": f"uid-{name}", "resourceVersion": "42"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata | {"annotations": annotations},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("obj", "relevant"),
    [
        (pod(), True),
        (pod(scheduler="default-scheduler", **{"scheduling.k8s.io/group-name": "pg"}), True),
        (pod(scheduler="default-scheduler", node="node-1"), True),  # occupies a node we schedule onto
        (pod(scheduler="default-scheduler"), False),  # another scheduler's pending pod: nobody's concern
    ],
    ids=["ours", "in-a-podgroup", "bound-elsewhere", "another-schedulers-pending"],
)
def test_only_pods_that_concern_us_leave_the_cluster(obj: dict, relevant: bool) -> None:
    assert is_relevant("Pod", view_of("Pod", obj), SCHEDULERS) is relevant


def test_of_the_config_maps_only_volcanos_scheduler_and_controller_configurations_leave() -> None:
    assert is_relevant(
        "ConfigMap", view_of("ConfigMap", {"metadata": {"name": "volcano-scheduler-configmap"}}), SCHEDULERS
    )
    assert is_relevant(
        "ConfigMap", view_of("ConfigMap", {"metadata": {"name": "volcano-controller-configmap"}}), SCHEDULERS
    )
    assert not is_relevant(
        "ConfigMap", view_of("ConfigMap", {"metadata": {"name": "kube-root-ca.crt"}}), SCHEDULERS
    )


def test_a_change_is_published_under_its_object_with_an_id_that_a_rewatch_repeats() -> None:
    first = to_message("Pod", "MODIFIED", view_of("Pod", pod()), max_bytes=LIMIT)
    again = to_message("Pod", "MODIFIED", view_of("Pod", pod()), max_bytes=LIMIT)
    assert first.subject == "cluster.pod.team%2Ea.p-0"  # dots in names are escaped in subject tokens
    assert first.event_id == again.event_id == "uid-p-0:42:MODIFIED"  # the bus drops the repeat
    assert first.data.object["metadata"]["name"] == "p-0"
    assert first.data.complete


def test_a_relist_republishes_under_ids_of_its_own() -> None:
    relisted = to_message("Pod", "ADDED", view_of("Pod", pod()), max_bytes=LIMIT, relist_id="r-7")
    assert relisted.event_id == "uid-p-0:42:relist:r-7"
    assert relisted.data.relist_id == "r-7"


def test_a_long_annotation_goes_first_when_the_event_is_too_large() -> None:
    message = to_message("Pod", "ADDED", view_of("Pod", pod(notes="x" * 2 * LIMIT)), max_bytes=LIMIT)
    assert len(message.payload) <= LIMIT
    assert message.data.complete
    assert "metadata.annotations[notes]" in message.data.trimmed
    assert message.data.object["spec"]["schedulerName"] == "volcano"


def test_an_object_still_too_large_is_published_as_a_reference_to_itself() -> None:
    huge = pod()
    huge["spec"]["containers"] = [{"name": f"c{i}", "image": "x" * 1000} for i in range(200)]
    message = to_message("Pod", "ADDED", view_of("Pod", huge), max_bytes=LIMIT)
    assert len(message.payload) <= LIMIT
    assert not message.data.complete
    assert message.data.object["metadata"]["uid"] == "uid-p-0"
    assert "spec" not in message.data.object
    assert orjson.loads(message.payload)["id"] == message.event_id
