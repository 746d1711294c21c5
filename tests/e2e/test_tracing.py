"""One trace per job, across the services, exported with OpenTelemetry to an OTLP endpoint.

A stack of this module's own runs with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a collector the
test runs (a plain HTTP server that decodes OTLP/HTTP protobuf, as an OpenTelemetry Collector
would). A Volcano Job submitted with kubectl runs; the spans the collector receives for it must
share one trace id, come from admission, watcher, scheduler and controller, and include the
admission root, the scheduler's placement and the controller's bind. The Job carries the trace
context as the annotation `phalanx.io/traceparent`, and so do its PodGroup and pods.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import yaml
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from phalanx import stack as stacks
from tests import waiting
from tests.e2e.conftest import kubectl, up_own_stack

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed"),
]

NAMESPACE = "tracing-e2e"
WAIT_SECONDS = 120.0


class Collector:
    """Spans received over OTLP/HTTP, as (service, name, trace id, span id, parent span id)."""

    def __init__(self) -> None:
        self.spans: list[dict[str, str]] = []
        self.lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                collector.take(request)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def take(self, request: ExportTraceServiceRequest) -> None:
        with self.lock:
            for resource_spans in request.resource_spans:
                service = next(
                    (
                        a.value.string_value
                        for a in resource_spans.resource.attributes
                        if a.key == "service.name"
                    ),
                    "",
                )
                for scope in resource_spans.scope_spans:
                    for span in scope.spans:
                        self.spans.append(
                            {
                                "service": service,
                                "name": span.name,
                                "trace": span.trace_id.hex(),
                                "span": span.span_id.hex(),
                                "parent": span.parent_span_id.hex(),
                            }
                        )

    def received(self) -> list[dict[str, str]]:
        with self.lock:
            return list(self.spans)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def collector() -> Iterator[Collector]:
    running = Collector()
    yield running
    running.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, collector: Collector) -> Iterator[stacks.Stack]:
    """A stack of this module's own, its services exporting spans to the test's collector."""
    state_dir = tmp_path_factory.mktemp("tracing-stack")
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.endpoint
    try:
        running = up_own_stack(state_dir)
        try:
            yield running
        finally:
            stacks.down(state_dir)
    finally:
        del os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"]


# A whole stack acts on its own time (on a scaled one, whichever replica holds the job).
eventually = partial(waiting.eventually, within=WAIT_SECONDS, every=0.5)


def job(name: str) -> dict[str, Any]:
    requests = {"requests": {"cpu": "500m", "memory": "128Mi"}}
    template = {"spec": {"containers": [{"name": "main", "image": "busybox", "resources": requests}]}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"minAvailable": 2, "tasks": [{"name": "worker", "replicas": 2, "template": template}]},
    }


def annotation(stack: stacks.Stack, kind: str, name: str) -> str:
    path = "jsonpath={.metadata.annotations.phalanx\\.io/traceparent}"
    return kubectl(stack, "get", kind, name, "-n", NAMESPACE, "-o", path).stdout


def test_one_jobs_spans_share_a_trace_across_the_services(stack: stacks.Stack, collector: Collector) -> None:
    kubectl(stack, "create", "namespace", NAMESPACE)
    applied = kubectl(stack, "apply", "-f", "-", stdin=yaml.safe_dump(job("traced")))
    assert applied.returncode == 0, applied.stderr

    # Admission started the trace and wrote its context on the Job; the controller carried it on.
    context = eventually(lambda: annotation(stack, "vcjob", "traced"), "the Job's trace context")
    trace_id = context.split("-")[1]
    eventually(
        lambda: (
            kubectl(
                stack, "get", "pod", "traced-worker-0", "-n", NAMESPACE, "-o", "jsonpath={.spec.nodeName}"
            ).stdout
        ),
        "the job's pods bound",
    )
    assert annotation(stack, "pod", "traced-worker-0").split("-")[1] == trace_id
    podgroups = kubectl(stack, "get", "podgroups", "-n", NAMESPACE, "-o", "name").stdout.split()
    assert podgroups
    assert annotation(stack, "podgroup", podgroups[0].split("/")[-1]).split("-")[1] == trace_id

    def whole_trace() -> list[dict[str, str]] | None:
        spans = [s for s in collector.received() if s["trace"] == trace_id]
        names = {s["name"] for s in spans}
        wanted = {"admission: Job admitted", "scheduler: placed", "controller: GangPlaced"}
        # Each service exports on its own schedule: wait until every parent has arrived too.
        ids = {s["span"] for s in spans}
        orphans = [s for s in spans if s["parent"] not in ("", *ids)]
        return spans if wanted <= names and not orphans else None

    spans = eventually(whole_trace, "the admission, placement and bind spans of the job's trace")
    services = {s["service"] for s in spans}
    assert services >= {"phalanx-admission", "phalanx-watcher", "phalanx-controller", "phalanx-scheduler"}
    # One root (admission's), and every other span's parent is a span of the same trace.
    roots = [s for s in spans if not s["parent"]]
    assert [r["name"] for r in roots] == ["admission: Job admitted"]
    # The watcher published the Job under the admission's span; the bind follows the placement.
    by_id = {s["span"]: s for s in spans}
    bind = next(s for s in spans if s["name"] == "controller: GangPlaced")
    assert by_id[bind["parent"]]["name"] == "scheduler: placed"
    watched = [s for s in spans if s["name"].startswith("watcher: Job")]
    assert watched
    assert by_id[watched[0]["parent"]]["name"] == "admission: Job admitted"
    kubectl(stack, "delete", "vcjob", "traced", "-n", NAMESPACE, "--wait=false")
