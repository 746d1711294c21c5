"""The trace context's rules (shared/tracing.py): what is a valid traceparent, what travels when
tracing is off, and the parent-child chain of spans when it is on (an in-memory exporter)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from shared import tracing
from shared.messages.cluster import ObjectChanged
from shared.messages.envelope import decode, new_event
from shared.volcano.keys import TRACEPARENT

pytestmark = pytest.mark.unit

CONTEXT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture
def exported() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    assert tracing.configure("test", exporter=exporter)
    yield exporter
    tracing.shutdown()


def test_only_a_w3c_version_00_context_with_nonzero_ids_is_valid() -> None:
    assert tracing.valid(CONTEXT) == CONTEXT
    assert tracing.valid(CONTEXT.upper()) == CONTEXT
    assert tracing.valid("00-" + "0" * 32 + "-00f067aa0ba902b7-01") is None
    assert tracing.valid("00-4bf92f3577b34da6a3ce929d0e0e4736-" + "0" * 16 + "-01") is None
    assert tracing.valid("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") is None
    assert tracing.valid("garbage") is None
    assert tracing.valid(42) is None


def test_an_objects_context_is_read_from_its_annotation() -> None:
    annotated = {"metadata": {"annotations": {TRACEPARENT: CONTEXT}}}
    assert tracing.from_object(annotated) == CONTEXT
    assert tracing.from_object({"metadata": {"annotations": {TRACEPARENT: "x"}}}) is None
    assert tracing.from_object({"metadata": {}}) is None
    assert tracing.from_object({"metadata": {"annotations": None}}) is None


def test_off_nothing_starts_and_the_context_travels_unchanged() -> None:
    assert not tracing.enabled()
    assert tracing.start("admission") is None
    assert tracing.step("watcher", CONTEXT) == CONTEXT
    assert tracing.step("watcher", None) is None


def test_on_each_step_is_a_child_of_the_context_it_was_given(exported: InMemorySpanExporter) -> None:
    root = tracing.start("admission: Job admitted", {"k8s.job.name": "a"})
    assert root is not None
    watched = tracing.step("watcher: Job ADDED", root)
    placed = tracing.step("scheduler: placed", watched, {"phalanx.cycle": 7, "ignored": object()})
    assert placed is not None
    assert len({c.split("-")[1] for c in (root, watched, placed)}) == 1  # one trace
    spans = {s.name: s for s in exported.get_finished_spans()}
    assert spans["admission: Job admitted"].parent is None
    assert spans["watcher: Job ADDED"].parent.span_id == int(root.split("-")[2], 16)  # type: ignore[union-attr]
    assert spans["scheduler: placed"].parent.span_id == int(watched.split("-")[2], 16)  # type: ignore[union-attr,union-attr]
    assert dict(spans["scheduler: placed"].attributes or {}) == {"phalanx.cycle": 7}
    assert tracing.step("controller", "not a context") is None
    assert len(exported.get_finished_spans()) == 3  # an invalid parent starts nothing


def test_the_cloudevent_carries_the_context_as_its_tracing_extension() -> None:
    data = ObjectChanged(
        kind="Job", namespace="ns", name="a", uid="u", resource_version=1, change="ADDED", object={}
    )
    traced = new_event(data, source="test", traceparent=CONTEXT)
    assert b'"traceparent"' in traced.to_bytes()
    assert decode(traced.to_bytes()).traceparent == CONTEXT
    plain = new_event(data, source="test")
    assert b"traceparent" not in plain.to_bytes()  # an absent attribute is left out
    assert decode(plain.to_bytes()).traceparent is None
