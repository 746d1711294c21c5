"""The admission context as the webhook shell builds it from the cluster's Queue objects."""

from __future__ import annotations

import pytest

from services.admission.rules import AdmissionContext, QueueAdmissionFacts
from shared.volcano import Queue

from .builders import queue

pytestmark = pytest.mark.unit


def test_queue_view_reads_state_parent_resources_and_allocated_pods() -> None:
    manifest = queue(
        "team",
        state="Closed",
        annotations={"volcano.sh/hierarchy": "root/team"},
        parent="org",
        capability={"cpu": "4"},
        deserved={"cpu": "2"},
        guarantee={"resource": {"cpu": "1"}},
    )
    manifest["status"]["allocated"] = {"cpu": "3", "pods": "2"}
    view = QueueAdmissionFacts.from_queue(manifest)
    assert view == QueueAdmissionFacts(
        name="team",
        state="Closed",
        parent="org",
        capability={"cpu": "4"},
        deserved={"cpu": "2"},
        guarantee={"cpu": "1"},
        hierarchy="root/team",
        allocated_pods=2,
    )
    assert QueueAdmissionFacts.from_queue(Queue.model_validate(manifest)) == view


def test_a_queue_without_state_is_not_open() -> None:
    assert QueueAdmissionFacts.from_queue(queue("new")).state == ""


def test_queues_without_parent_are_children_of_root() -> None:
    ctx = AdmissionContext.from_cluster(
        [queue("root"), queue("default"), queue("org"), queue("org-a", parent="org")]
    )
    assert [view.name for view in ctx.children("root")] == ["default", "org"]
    assert [view.name for view in ctx.children("org")] == ["org-a"]
    assert ctx.is_leaf("org-a")
    assert not ctx.is_leaf("org")


def test_builtin_priority_classes_always_exist() -> None:
    ctx = AdmissionContext(priority_classes=frozenset({"high"}))
    assert ctx.priority_class_exists("high")
    assert ctx.priority_class_exists("system-cluster-critical")
    assert not ctx.priority_class_exists("low")
