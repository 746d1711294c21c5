"""The shape rules of docs/architecture.md that a tool can check and habit would let slip.

- No module outside tests is longer than 400 lines: a longer one holds more than one thing.
- No two classes outside tests share a name: a reader (and a grep) must not have to ask which
  `QueueView` a function means. The names that still clash are listed below, each with why it
  may; the list only shrinks (an entry that no longer clashes fails too, so it is taken out).
- Every NATS subject and stream name is spelled once, in `shared/messages/subjects.py`.
- Every label and annotation key is spelled once, in `shared/volcano/keys.py` (API versions are not keys).
- The services read an object's metadata through the typed views of `shared/volcano/objects.py`,
  not by walking its dict: the walks left (building or trimming an object, schema checks) only shrink.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("services", "shared", "phalanx")
MAX_LINES = 400
SUBJECTS_MODULE = Path("shared/messages/subjects.py")
KEYS_MODULE = Path("shared/volcano/keys.py")
VIEWS_MODULE = Path("shared/volcano/objects.py")
_METADATA_WALK = re.compile(r"""\[["']metadata["']\]|\.get\(["']metadata["']""")
# The metadata walks left in services and shared, outside the views and the simulator (a generic
# API server, whose store of dicts is its job): objects being built or trimmed in place (core/pods.py,
# the watcher's trim), the schema and HyperNode parsers, webhook registration's own configuration
# objects, and a few object checks at the edge. Lower it as they go; never raise it: read a new
# object through a view instead.
METADATA_WALKS_LEFT = 20

# Class names that still appear more than once, and why that is tolerated for now. The storage
# models mirror the Volcano models they project (`tables.PodGroup` is the row of a PodGroup);
# the rest are module-private helpers whose module says which one is meant.
KNOWN_CLASHES: dict[str, str] = {
    "ApiError": "the simulator raises its own apiserver errors; shared.kube.client's wraps a client's",
    "Blocker": "vcctl's explanation of the scheduler core's fairness blocker, read back from its output",
    "Cluster": "the simulator's composition root, a HyperNode's cluster field, vcctl's kubeconfig cluster",
    "Decision": "a storage row (tables.Decision) and the event recorder's verdict on one Event",
    "DisruptionBudget": "the scheduler core's snapshot of a budget and its storage row",
    "Figures": "a replay's figures and a benchmark's, each in its own report",
    "History": "the simulator's watch history and a scenario probe's history",
    "Kind": "the simulator's served resource type and shared.kube's watched kind",
    "NodeShape": "a scenario's node shape and a benchmark's, each in its own file format",
    "PodGroup": "the Volcano model and its storage row",
    "PodRef": "a message's pod reference and a scenario expectation, never in one module",
    "Policy": "a Volcano lifecycle policy and admission's certificate policy",
    "Queue": "the Volcano model and its storage row",
    "Reservation": "the scheduler core's reservation and a Queue's spec.reservation",
    "Result": "a scenario's result and a benchmark run's",
    "Scenario": "a scenario file and a benchmark's workload scenario",
    "Stack": "the CLI's local stack and a scenario's handle on it",
    "Step": "steps of a certificate rotation, of a scenario, of a scaling benchmark",
    "Steps": "the CLI's progress steps and a scenario's steps",
    "Strict": "pydantic base classes of two scenario modules",
    "Target": "the simulator's request target, the controller's reconcile target, vcctl's kube target",
    "Verdict": "the console's verdict row, the chaos oracle's, vcctl's explanation",
}

_LABEL_LITERAL = re.compile(
    r"[\"'](?:volcano\.sh|scheduling\.volcano\.sh|scheduling\.k8s\.io|phalanx\.io)/(?!v[0-9])[a-z][a-z0-9-]*[\"']"
)


# A string that starts a subject of one of the streams ("cluster.pod.…", f"decisions.{…}"), or a
# stream's name on its own (a file name such as "jobs.yaml" is neither).
_SUBJECT_LITERAL = re.compile(
    r"[\"'](?:(?:cluster|jobs|decisions|audit|deadletter)\.(?!(?:ya?ml|json|py|md|txt)[\"'])[a-z0-9_*>{]"
    r"|(?:CLUSTER|JOBS|DECISIONS|AUDIT|DEADLETTER)[\"'])"
)


def _modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (REPO / package).rglob("*.py"))


def test_no_module_outside_tests_is_longer_than_400_lines() -> None:
    long = {
        str(path.relative_to(REPO)): n
        for path in _modules()
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}, f"split these along what they hold (docs/architecture.md): {long}"


def test_no_two_classes_outside_tests_share_a_name() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in _modules():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                where[node.name].append(str(path.relative_to(REPO)))
    clashes = {name: places for name, places in where.items() if len(places) > 1}
    new = {name: places for name, places in clashes.items() if name not in KNOWN_CLASHES}
    assert new == {}, f"give each a name that says what it is (docs/architecture.md): {new}"
    gone = sorted(set(KNOWN_CLASHES) - set(clashes))
    assert gone == [], f"these no longer clash: take them out of KNOWN_CLASHES: {gone}"


def test_every_subject_and_stream_name_is_spelled_once() -> None:
    spelled = {
        str(path.relative_to(REPO)): found
        for path in _modules()
        if path.relative_to(REPO) != SUBJECTS_MODULE and (found := _SUBJECT_LITERAL.findall(path.read_text()))
    }
    assert spelled == {}, f"build these with shared/messages/subjects.py: {spelled}"


def test_every_label_and_annotation_key_is_spelled_once() -> None:
    spelled = {
        str(path.relative_to(REPO)): found
        for path in _modules()
        if path.relative_to(REPO) != KEYS_MODULE and (found := _LABEL_LITERAL.findall(path.read_text()))
    }
    # One exception, named: shared.domain.runtime_estimate's key sits beside the estimate it feeds,
    # since shared.volcano builds on shared.domain and the reverse import would be a cycle.
    spelled.pop("shared/domain/runtime_estimate.py", None)
    assert spelled == {}, f"import these from shared/volcano/keys.py: {spelled}"


def test_services_read_metadata_through_the_object_views() -> None:
    walks = {
        str(path.relative_to(REPO)): found
        for path in _modules()
        if path.parts[len(REPO.parts)] in ("services", "shared")
        and not path.relative_to(REPO).is_relative_to("services/simulator")
        and path.relative_to(REPO) != VIEWS_MODULE
        and (found := len(_METADATA_WALK.findall(path.read_text())))
    }
    total = sum(walks.values())
    assert total <= METADATA_WALKS_LEFT, (
        f"{total} metadata walks (at most {METADATA_WALKS_LEFT}): read objects through "
        f"shared/volcano/objects.py (KubeObject, PodObject, ...): {walks}"
    )
