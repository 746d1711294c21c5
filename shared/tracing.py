"""One trace per job across the services: W3C `traceparent` carried hop to hop, OpenTelemetry spans.

Where the context travels (docs/observability.md, "Tracing"):
- admission starts the trace when it defaults a new Job and writes the context on the Job as the
  annotation `phalanx.io/traceparent`; the controller copies it to the Job's PodGroup and pods;
- the watcher reads the annotation of each object it publishes and carries it, as the CloudEvents
  distributed-tracing extension attribute `traceparent`, on the `cluster.*` event;
- the controller and the scheduler's ingest continue the trace from the event they consume; the
  scheduler keeps the PodGroup's context with the gang and puts it on its `decisions.*` events;
  the controller's binds continue it from the decision.

Spans are exported with OpenTelemetry's OTLP/HTTP exporter when an endpoint is configured
(`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`, OpenTelemetry's own
variables). Without one, tracing is off: the SDK is not even imported, `step` returns the context
it was given unchanged (so a service with tracing on further down still joins the trace), and no
trace is started.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from typing import Any

import structlog

from shared.volcano.keys import TRACEPARENT as TRACEPARENT_ANNOTATION

log = structlog.get_logger()

_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")

_tracer: Any = None  # an OpenTelemetry Tracer while tracing is on
_provider: Any = None


def endpoint_configured() -> bool:
    return any(os.environ.get(name) for name in _ENDPOINT_VARIABLES)


def configure(service: str, *, exporter: Any = None) -> bool:
    """Switch tracing on for this process if an OTLP endpoint is configured; True when on.

    `exporter` (a SpanExporter) replaces OTLP and switches tracing on regardless: for tests."""
    global _tracer, _provider
    if _tracer is not None or not (exporter or endpoint_configured()):
        return _tracer is not None
    # Imported here: a process without an endpoint never loads the SDK.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    _provider = TracerProvider(resource=Resource.create({"service.name": f"phalanx-{service}"}))
    if exporter is not None:
        _provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        _provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(), schedule_delay_millis=1000))
    _tracer = _provider.get_tracer("phalanx")
    log.info("tracing on", service=service)
    return True


def shutdown() -> None:
    """Export what is buffered and stop (at the service's stop)."""
    global _tracer, _provider
    if _provider is not None:
        _provider.shutdown()
    _tracer = _provider = None


def enabled() -> bool:
    return _tracer is not None


def valid(traceparent: Any) -> str | None:
    """`traceparent` if it is a W3C version-00 trace context with non-zero ids, else None."""
    if not isinstance(traceparent, str):
        return None
    match = _TRACEPARENT.match(traceparent.strip().lower())
    if match is None or set(match.group(1)) == {"0"} or set(match.group(2)) == {"0"}:
        return None
    return match.group(0)


def from_object(obj: Any) -> str | None:
    """The trace context a Kubernetes object carries in its annotation, if any and well formed."""
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return valid(annotations.get(TRACEPARENT_ANNOTATION)) if isinstance(annotations, dict) else None


def start(name: str, attributes: Mapping[str, Any] | None = None) -> str | None:
    """A new trace's root span, recorded now; its context, or None when tracing is off."""
    if _tracer is None:
        return None
    return _record(name, None, attributes or {})


def step(
    name: str,
    parent: str | None,
    attributes: Mapping[str, Any] | None = None,
    *,
    started_ns: int | None = None,
) -> str | None:
    """Record one step of a traced job as a span under `parent`, ending now; the context to pass on.

    Off, or without a (valid) parent, this records nothing and returns `parent` as it came: the
    context still travels, and nothing is started for work no trace began.
    """
    parent = valid(parent)
    if _tracer is None or parent is None:
        return parent
    return _record(name, parent, attributes or {}, started_ns=started_ns)


def _record(
    name: str, parent: str | None, attributes: Mapping[str, Any], *, started_ns: int | None = None
) -> str:
    from opentelemetry.context import Context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    if parent is None:
        context = Context()  # no parent: the SDK gives the span a new trace id
    else:
        context = TraceContextTextMapPropagator().extract({"traceparent": parent})
    clean = {k: v for k, v in attributes.items() if isinstance(v, str | int | float | bool)}
    started = started_ns or time.time_ns()
    span = _tracer.start_span(name, context=context, attributes=clean, start_time=started)
    span.end()
    ids = span.get_span_context()
    return f"00-{ids.trace_id:032x}-{ids.span_id:016x}-01"
