"""The envelope and subjects: what goes on the wire and comes back."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.messages import catalog, decisions, subjects
from shared.messages.envelope import UnknownEventType, decode, new_event

pytestmark = pytest.mark.unit


def test_cloudevent_structured_json_round_trip() -> None:
    data = decisions.GangPlaced(
        epoch=3,
        cycle=7,
        gang_uid="g",
        namespace="default",
        podgroup="j1-abc",
        binds=(decisions.PodBinding(uid="p", namespace="default", name="j1-w-0", node="node-1"),),
    )
    event = new_event(data, source="phalanx/scheduler", subject="default/j1-abc")
    document = orjson.loads(event.to_bytes())
    assert document["specversion"] == "1.0"
    assert document["type"] == "phalanx.decisions.gang.placed.v1"
    assert document["datacontenttype"] == "application/json"
    assert {"id", "source", "time", "data", "subject"} <= set(document)
    assert decode(event.to_bytes()) == event


def test_unknown_type_is_refused() -> None:
    with pytest.raises(UnknownEventType):
        decode(b'{"type": "somebody.else.v1"}')


def test_every_event_module_is_registered() -> None:
    assert catalog.cluster.ObjectChanged.TYPE == "phalanx.cluster.object.changed.v1"


@given(st.text(min_size=1, max_size=40))
def test_subject_tokens_escape_and_unescape(name: str) -> None:
    token = subjects.escape_token(name)
    assert not set(token) & set(".*> \t\n\r")
    assert subjects.unescape_token(token) == name


def test_cluster_scoped_objects_use_the_placeholder_namespace() -> None:
    assert subjects.cluster_object("Queue", None, "q1") == "cluster.queue._.q1"
    assert subjects.cluster_object("Pod", "ns", "a.b") == "cluster.pod.ns.a%2Eb"
