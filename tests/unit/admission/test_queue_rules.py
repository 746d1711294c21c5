"""Queue admission: defaults, field consistency, hierarchy, root protection and deletion."""

from __future__ import annotations

from typing import Any

import pytest

from services.admission.rules import (
    AdmissionContext,
    QueueAdmissionFacts,
    compose,
    default_queue,
    validate_queue_create,
    validate_queue_delete,
    validate_queue_update,
)

from .builders import context, queue

pytestmark = pytest.mark.unit


def test_defaults_weight_reclaimable_and_root_of_hierarchy() -> None:
    defaulted = default_queue(
        queue("q", annotations={"volcano.sh/hierarchy": "sci/dev", "volcano.sh/hierarchy-weights": "2/8"})
    )
    assert defaulted["spec"] == {"reclaimable": True, "weight": 1}
    assert defaulted["metadata"]["annotations"] == {
        "volcano.sh/hierarchy": "root/sci/dev",
        "volcano.sh/hierarchy-weights": "1/2/8",
    }


def test_defaults_keep_what_was_given() -> None:
    given = queue(
        "q",
        weight=4,
        reclaimable=False,
        annotations={"volcano.sh/hierarchy": "root/a", "volcano.sh/hierarchy-weights": "1/2"},
    )
    assert default_queue(given) == given


TREE = context(
    QueueAdmissionFacts("closed", state="Closed"),
    QueueAdmissionFacts(
        "org", capability={"cpu": "8", "memory": "16Gi"}, deserved={"cpu": "6"}, guarantee={"cpu": "2"}
    ),
    QueueAdmissionFacts(
        "org-a", parent="org", capability={"cpu": "4"}, deserved={"cpu": "3"}, guarantee={"cpu": "1"}
    ),
    QueueAdmissionFacts("busy", allocated_pods=3),
    QueueAdmissionFacts("deep-1", parent="root"),
    QueueAdmissionFacts("deep-2", parent="deep-1"),
    QueueAdmissionFacts("deep-3", parent="deep-2"),
    QueueAdmissionFacts("deep-4", parent="deep-3"),
    QueueAdmissionFacts("deep-5", parent="deep-4"),
    QueueAdmissionFacts("tagged", hierarchy="root/sci/dev"),
)

# (id, queue, expected message, expected cause fields)
CREATE: list[tuple[str, dict[str, Any], str, list[str]]] = [
    ("plain", queue("q", weight=1), "", []),
    (
        "consistent-shares",
        queue("q", capability={"cpu": "4"}, deserved={"cpu": "2"}, guarantee={"resource": {"cpu": "1"}}),
        "",
        [],
    ),
    (
        "negative-weight",
        queue("q", weight=-1),
        "requestBody.spec.weight: Invalid value: -1: queue weight must be a positive integer",
        ["spec.weight"],
    ),
    (
        "weight-too-large",
        queue("q", weight=70000),
        "requestBody.spec.weight: Invalid value: 70000: queue weight must be no more than 65535",
        ["spec.weight"],
    ),
    (
        "negative-capability",
        queue("q", capability={"cpu": "-1"}),
        'requestBody.spec.capability.cpu: Invalid value: "-1": must be greater than or equal to 0',
        ["spec.capability[cpu]"],
    ),
    (
        "guarantee-without-deserved",
        queue("q", guarantee={"resource": {"cpu": "1"}}),
        'requestBody.spec.deserved.cpu: Invalid value: "<nil>": deserved[cpu] must be >= guarantee[cpu]=1',
        ["spec.deserved[cpu]"],
    ),
    (
        "deserved-below-guarantee",
        queue("q", deserved={"memory": "1Gi"}, guarantee={"resource": {"memory": "2Gi"}}),
        'requestBody.spec.deserved.memory: Invalid value: "1Gi": '
        "deserved[memory]=1Gi must be >= guarantee[memory]=2Gi",
        ["spec.deserved[memory]"],
    ),
    (
        "deserved-above-capability",
        queue("q", capability={"cpu": "2"}, deserved={"cpu": "3"}),
        'requestBody.spec.deserved.cpu: Invalid value: "3": deserved[cpu]=3 must be <= capability[cpu]=2',
        ["spec.deserved[cpu]"],
    ),
    (
        "two-field-errors-aggregate",
        queue("q", weight=-1, capability={"cpu": "2"}, deserved={"cpu": "3"}),
        "[requestBody.spec.weight: Invalid value: -1: queue weight must be a positive integer, "
        'requestBody.spec.deserved.cpu: Invalid value: "3": deserved[cpu]=3 must be <= capability[cpu]=2]',
        ["spec.weight", "spec.deserved[cpu]"],
    ),
    (
        "unknown-state",
        queue("q", state="Closing"),
        'requestBody.spec.state: Invalid value: "Closing": queue state must be in [Open Closed]',
        ["status.state"],
    ),
    (
        "hierarchy-lengths-differ",
        queue("q", annotations={"volcano.sh/hierarchy": "root/a", "volcano.sh/hierarchy-weights": "1"}),
        'requestBody.metadata.annotations: Invalid value: "root/a": '
        "volcano.sh/hierarchy must have the same length with volcano.sh/hierarchy-weights",
        ["metadata.annotations"],
    ),
    (
        "hierarchy-weight-zero",
        queue("q", annotations={"volcano.sh/hierarchy": "root/a", "volcano.sh/hierarchy-weights": "1/0"}),
        'requestBody.metadata.annotations: Invalid value: "1/0": 0 in the 1/0 must be larger than 0',
        ["metadata.annotations"],
    ),
    (
        "hierarchy-weight-not-number",
        queue("q", annotations={"volcano.sh/hierarchy": "root/a", "volcano.sh/hierarchy-weights": "1/x"}),
        'requestBody.metadata.annotations: Invalid value: "1/x": '
        'x in the 1/x is invalid number: strconv.ParseFloat: parsing "x": invalid syntax',
        ["metadata.annotations"],
    ),
    (
        "hierarchy-prefix-of-another",
        queue("q", annotations={"volcano.sh/hierarchy": "root/sci", "volcano.sh/hierarchy-weights": "1/1"}),
        'requestBody.metadata.annotations: Invalid value: "root/sci": '
        "root/sci is not allowed to be in the sub path of root/sci/dev of queue tagged",
        ["metadata.annotations"],
    ),
    ("parent-itself", queue("q", parent="q"), "queue q cannot use itself as parent", ["spec.parent"]),
    (
        "parent-missing",
        queue("q", parent="ghost"),
        'failed to get parent queue ghost of queue q: queue.scheduling.volcano.sh "ghost" not found',
        ["spec.parent"],
    ),
    (
        "too-deep",
        queue("q", parent="deep-5"),
        "queue q exceeds the maximum allowed depth of 5",
        ["spec.parent"],
    ),
    (
        "parent-running-pods",
        queue("q", parent="busy"),
        "queue busy cannot be the parent queue of queue q because it has allocated Pods: 3",
        ["spec.parent"],
    ),
    ("child-within-parent", queue("q", parent="org", capability={"cpu": "8"}), "", []),
    (
        "child-above-ancestor",
        queue("q", parent="org", capability={"cpu": "9", "memory": "1Gi"}),
        "queue q capability[cpu]=9 exceeds its ancestor's capability=8",
        ["spec"],
    ),
    (
        "child-memory-above-ancestor",
        queue("q", parent="org", capability={"memory": "32Gi"}),
        "queue q capability[memory]=32Gi exceeds its ancestor's capability=16Gi",
        ["spec"],
    ),
    (
        "siblings-guarantee-above-parent",
        queue("q", parent="org", deserved={"cpu": "2"}, guarantee={"resource": {"cpu": "2"}}),
        "parent queue org validation failed: sum of children's guarantee (cpu 3000.00, memory 0.00) "
        "exceeds parent's guarantee limit (cpu 2000.00, memory 0.00)",
        ["spec"],
    ),
    (
        "siblings-deserved-above-parent",
        queue("q", parent="org", deserved={"cpu": "4"}),
        "parent queue org validation failed: sum of children's deserved (cpu 7000.00, memory 0.00) "
        "exceeds parent's deserved limit (cpu 6000.00, memory 0.00)",
        ["spec"],
    ),
    (
        "parent-without-guarantee",
        queue("q", parent="deep-1", deserved={"cpu": "1"}),
        "parent queue deep-1 validation failed: sum of children's deserved (cpu 1000.00, memory 0.00) "
        "exceeds parent's deserved limit (cpu 0.00, memory 0.00)",
        ["spec"],
    ),
]


@pytest.mark.parametrize(
    ("manifest", "message", "fields"), [c[1:] for c in CREATE], ids=[c[0] for c in CREATE]
)
def test_queue_create_rule(manifest: dict[str, Any], message: str, fields: list[str]) -> None:
    errors = validate_queue_create(default_queue(manifest), TREE)
    assert compose(errors, "aggregate") == message
    assert [error.field for error in errors] == fields


def org(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "weight": 1,
        "capability": {"cpu": "8", "memory": "16Gi"},
        "deserved": {"cpu": "6"},
        "guarantee": {"resource": {"cpu": "2"}},
    }
    return queue("org", state="Open", **(base | spec))


UPDATE: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    ("close", org(), org() | {"status": {"state": "Closed"}}, ""),
    ("raise-capability", org(), org(capability={"cpu": "16", "memory": "16Gi"}), ""),
    (
        "shrink-below-child",
        org(),
        org(capability={"cpu": "2", "memory": "16Gi"}, deserved={"cpu": "2"}),
        "queue org capability[cpu]=2 is smaller than its descendants' max capability=4",
    ),
    (
        "shrink-guarantee-below-children",
        org(),
        org(guarantee={"resource": {"cpu": "500m"}}, deserved={"cpu": "6"}),
        "queue org validation failed: sum of children's guarantee (cpu 1000.00, memory 0.00) "
        "exceeds parent's guarantee limit (cpu 500.00, memory 0.00)",
    ),
    (
        "weight-only-skips-hierarchy",
        org(capability={"cpu": "1"}, deserved={"cpu": "1"}, guarantee={"resource": {"cpu": "1"}}),
        org(capability={"cpu": "1"}, deserved={"cpu": "1"}, guarantee={"resource": {"cpu": "1"}}, weight=3),
        "",
    ),
    (
        "root-resources-frozen",
        queue("root", capability={"cpu": "100"}),
        queue("root", capability={"cpu": "200"}),
        "root queue's resource attributes (capability, deserved, guarantee) cannot be modified",
    ),
    ("root-weight-may-change", queue("root", weight=1), queue("root", weight=2), ""),
    (
        "move-under-running-queue",
        queue("q"),
        queue("q", parent="busy"),
        "queue busy cannot be the parent queue of queue q because it has allocated Pods: 3",
    ),
]


@pytest.mark.parametrize(("old", "new", "message"), [c[1:] for c in UPDATE], ids=[c[0] for c in UPDATE])
def test_queue_update_rule(old: dict[str, Any], new: dict[str, Any], message: str) -> None:
    assert compose(validate_queue_update(old, new, TREE), "aggregate") == message


DELETE_CTX = AdmissionContext(
    queues={
        "default": QueueAdmissionFacts("default"),
        "root": QueueAdmissionFacts("root"),
        "idle": QueueAdmissionFacts("idle"),
        "busy": QueueAdmissionFacts("busy", allocated_pods=2),
        "holding": QueueAdmissionFacts("holding"),
        "org": QueueAdmissionFacts("org"),
        "org-a": QueueAdmissionFacts("org-a", parent="org"),
        "org-b": QueueAdmissionFacts("org-b", parent="org"),
    },
    jobs_per_queue={"holding": 4, "idle": 0},
)
DELETE = [
    ("idle", ""),
    ("unknown", ""),
    ("default", "`default` queue can not be deleted"),
    ("root", "`root` queue can not be deleted"),
    ("busy", "queue busy cannot be deleted because it has allocated Pods: 2"),
    ("holding", "queue holding cannot be deleted because it still holds 4 jobs"),
    ("org", "queue org can not be deleted because it has 2 child queues: org-a, org-b"),
]


@pytest.mark.parametrize(("name", "message"), DELETE, ids=[name for name, _ in DELETE])
def test_queue_delete_rule(name: str, message: str) -> None:
    assert compose(validate_queue_delete(name, DELETE_CTX), "aggregate") == message


def test_allocated_pods_check_can_be_switched_off_as_in_volcano() -> None:
    ctx = AdmissionContext(queues=DELETE_CTX.queues, enable_queue_allocated_pods_check=False)
    assert validate_queue_delete("busy", ctx) == []
