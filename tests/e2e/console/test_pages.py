"""The console's pages against the real stack `phalanx up` starts: what a user reads over HTTP.

Each test submits Volcano Jobs with kubectl and reads the server-rendered pages, which come from
PostgreSQL (as phalanx_reader), the simulated Kubernetes API and the AUDIT stream (as the auditor).
"""

from __future__ import annotations

import re
import shutil
import threading

import httpx
import orjson
import pytest

from phalanx import stack as stacks
from tests.e2e.console.helpers import page, submit, wait_for_page

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed"),
]

BUSY_NODE = re.compile(r'aria-label="node-\d+: \d+% used; cpu [1-9]')  # a node running the gang's pods
ALLOCATED_CPU = re.compile(r'aria-label="cpu: [1-9]')  # the default queue's cpu bar, not empty


def test_a_running_job_shows_its_pods_nodes_and_audit_timeline(stack: stacks.Stack) -> None:
    submit(stack, "console-runs")
    listed = wait_for_page(stack, "/jobs", lambda html: "console-runs" in html and "phase-running" in html)
    assert 'href="/jobs/default/console-runs"' in listed

    html = wait_for_page(stack, "/jobs/default/console-runs", lambda h: "scheduler.placed" in h)
    assert "3 of 3 gang members placed" in html
    for index in range(3):
        assert f"console-runs-worker-{index}" in html
    assert "not placed" not in html  # every pod names its node
    assert "admission.admitted Job console-runs" in html
    assert "controller.phase-changed Job console-runs" in html
    assert 'id="why"' not in html  # a running job has nothing to wait for


def test_a_waiting_job_says_why_from_the_verdict_and_the_podgroup(stack: stacks.Stack) -> None:
    submit(stack, "console-waits", cpu="20")  # 60 cpu: more than the default cluster holds
    # The verdict (scheduler's table) and the condition (controller's write) arrive separately.
    html = wait_for_page(
        stack, "/jobs/default/console-waits", lambda h: 'id="why"' in h and "<td>Unschedulable</td>" in h
    )
    why = html[html.index('id="why"') : html.index("</section>")]
    assert "queue resource quota insufficient: insufficient cpu" in why
    assert "NotEnoughResources" in why
    conditions = html[html.index('id="conditions"') : html.index('id="timeline"')]
    assert "Unschedulable" in conditions


def test_jobs_filter_by_namespace_queue_phase_and_age(stack: stacks.Stack) -> None:
    submit(stack, "console-filtered", cpu="20")
    wait_for_page(stack, "/jobs", lambda html: "console-filtered" in html)
    assert "console-filtered" in page(stack, "/jobs?namespace=default&queue=default&phase=Pending")
    assert "console-filtered" not in page(stack, "/jobs?phase=Running")
    assert "console-filtered" not in page(stack, "/jobs?namespace=elsewhere")
    assert "no jobs match" in page(stack, "/jobs?queue=no-such-queue")
    assert "console-filtered" in page(stack, "/jobs?age=1h")
    refused = httpx.get(f"{stack.console_url}/jobs?age=forever", timeout=10)
    assert refused.status_code == 400
    assert "age must be one of 1h, 6h, 24h, 7d" in refused.text


def test_queues_and_nodes_show_allocation(stack: stacks.Stack) -> None:
    submit(stack, "console-alloc", run_seconds=120)
    queues = wait_for_page(stack, "/queues", lambda html: bool(ALLOCATED_CPU.search(html)))
    assert 'href="/jobs?queue=default"' in queues
    assert 'role="meter"' in queues
    # The leading scheduler sampled each queue's share (queue_share_history): a chart per queue.
    charted = wait_for_page(stack, "/queues", lambda html: 'class="share" role="img"' in html)
    assert re.search(
        r'<svg class="share" role="img" aria-label="share over the last [a-z0-9 ]+: now [0-9.]+', charted
    )
    nodes = wait_for_page(stack, "/nodes", lambda html: bool(BUSY_NODE.search(html)))
    assert nodes.count('class="cell heat-') >= 3


def test_events_stream_pushes_audit_events_as_they_happen(stack: stacks.Stack) -> None:
    received: list[dict[str, object]] = []
    connected = threading.Event()

    def listen() -> None:
        with httpx.stream("GET", f"{stack.console_url}/events", timeout=60) as response:
            for line in response.iter_lines():
                connected.set()
                if line.startswith("data: "):
                    event = orjson.loads(line[6:])
                    received.append(event)
                    if event.get("name") == "console-live" and event.get("action") == "admitted":
                        return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    assert connected.wait(30), "the event stream never answered"
    submit(stack, "console-live")
    listener.join(60)
    assert any(e.get("name") == "console-live" for e in received), received


def test_unknown_job_is_a_404_that_says_so(stack: stacks.Stack) -> None:
    response = httpx.get(f"{stack.console_url}/jobs/default/never-submitted", timeout=10)
    assert response.status_code == 404
    assert "no job default/never-submitted" in response.text
