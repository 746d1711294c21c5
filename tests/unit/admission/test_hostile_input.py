"""Hostile values and wrong shapes meet a clear refusal naming the field and the rule, never a
crash: numbers beyond int32, quantities no resource vector holds or that would take minutes to
parse, NULs, nesting past the limit, a list where an object belongs. And, over arbitrary JSON,
admission and the quantity parser never raise."""

from __future__ import annotations

import contextlib
import copy
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.admission.review import MAX_MESSAGE_CHARS, mutate, validate
from services.admission.rules import QueueAdmissionFacts
from shared.domain.quantity import MAX_MILLI, QuantityError, parse_quantity, to_milli
from shared.volcano import schema

from .builders import admission_review, context, job, podgroup, queue, task

pytestmark = pytest.mark.unit
CTX = context()


def refusal(
    obj: dict[str, Any], operation: str = "CREATE", old: dict[str, Any] | None = None
) -> dict[str, Any]:
    response = validate(admission_review(obj, operation, old), CTX)["response"]
    assert response["allowed"] is False, response
    return dict(response["status"])


def with_requests(**requests: Any) -> dict[str, Any]:
    template = {
        "spec": {"containers": [{"name": "main", "image": "busybox", "resources": {"requests": requests}}]}
    }
    return job(tasks=[task(template=template)])


@pytest.mark.parametrize(
    ("obj", "field", "rule"),
    [
        (job(tasks=[task(replicas=2**31)]), "spec.tasks[0].replicas", "less than or equal to 2147483647"),
        (job(minAvailable=-(2**31) - 1), "spec.minAvailable", "greater than or equal to -2147483648"),
        (
            job(ttlSecondsAfterFinished=10**30),
            "spec.ttlSecondsAfterFinished",
            "less than or equal to 2147483647",
        ),
        (job(maxRetry=2**40), "spec.maxRetry", "less than or equal to 2147483647"),
        (job(tasks={"worker": task()}), "spec.tasks", "must be of type array"),
        (job(tasks=[task(template="busybox")]), "spec.tasks[0].template", "must be of type object"),
        (job(queue=["a", "b"]), "spec.queue", "must be of type string"),
        (job(tasks=[task(replicas="3")]), "spec.tasks[0].replicas", "must be of type integer"),
        (job(tasks=[task(replicas=1.5)]), "spec.tasks[0].replicas", "must be of type integer"),
        (job(queue="team\x00; drop table queues"), "spec.queue", "must not contain NUL"),
        (with_requests(cpu="1e9999999"), "requests[cpu]", "exponent within"),
        (with_requests(cpu="9" * 100), "requests[cpu]", "at most 64 characters"),
        (with_requests(cpu="1Ei"), "requests[cpu]", "at most 9223372036854775807 milli-units"),
        (with_requests(**{"cpu\x00": "1"}), "resources.requests", "must not contain NUL"),
        (with_requests(**{"bad resource!": "1"}), "resources.requests", "name part must consist of"),
        (podgroup(minMember=2**31), "spec.minMember", "less than or equal to 2147483647"),
        (podgroup(minResources={"cpu": "1e99999999"}), "spec.minResources[cpu]", "exponent within"),
        (podgroup(queue={"name": "x"}), "spec.queue", "must be of type string"),
        (queue("q", weight=2**31), "spec.weight", "less than or equal to 2147483647"),
        (queue("q", parent=["root"]), "spec.parent", "must be of type string"),
        (queue("q", capability={"cpu": "1Ei"}), "spec.capability[cpu]", "milli-units"),
    ],
)
def test_a_hostile_value_is_refused_naming_its_field_and_rule(
    obj: dict[str, Any], field: str, rule: str
) -> None:
    started = time.monotonic()
    status = refusal(obj)
    assert time.monotonic() - started < 1.0
    assert status["code"] == 422
    assert status["reason"] == "Invalid"
    assert field in status["message"]
    assert rule in status["message"]
    assert any(field in cause["field"] for cause in status["details"]["causes"])


def test_a_wrong_spec_shape_is_refused_by_the_mutating_webhook_too() -> None:
    obj = job()
    obj["spec"] = [obj["spec"]]
    status = mutate(admission_review(obj), CTX)["response"]["status"]
    assert status["code"] == 422
    assert "spec in body must be of type object" in status["message"]


def test_nesting_past_the_limit_is_refused_wherever_it_is() -> None:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(5000):  # past every recursive reader's limit, JSON encoders included
        inner["x"] = {}
        inner = inner["x"]
    obj = job()
    obj["spec"]["tasks"][0]["template"]["spec"]["affinity"] = deep
    status = refusal(obj)
    assert f"nesting deeper than {schema.MAX_DEPTH} levels" in status["message"]


def nested(levels: int, leaf: Any, *, via_list: bool = False) -> Any:
    """`leaf` under `levels` containers: a value at depth `levels`, the root at depth 0."""
    value = leaf
    for _ in range(levels):
        value = [value] if via_list else {"x": value}
    return value


@pytest.mark.parametrize("via_list", [False, True])
@pytest.mark.parametrize("leaf", [1, "s", None, {}, []])
def test_the_depth_limit_counts_every_level_and_names_the_first_path_past_it(
    via_list: bool, leaf: Any
) -> None:
    assert schema.too_deep(nested(schema.MAX_DEPTH, leaf, via_list=via_list)) is None
    past = schema.too_deep(nested(schema.MAX_DEPTH + 1, leaf, via_list=via_list))
    assert past == (
        ".".join(["x"] * (schema.MAX_DEPTH + 1)) if not via_list else "[0]" * (schema.MAX_DEPTH + 1)
    )
    # An empty container at the limit holds nothing past it.
    assert schema.too_deep({"a": nested(schema.MAX_DEPTH - 1, {}), "b": 1}) is None


def test_a_refusal_never_repeats_a_huge_value_back() -> None:
    obj = job(tasks=[task(name="w" * 2_000_000)])
    status = refusal(obj)
    assert len(status["message"]) <= MAX_MESSAGE_CHARS + 64
    assert all(len(cause["message"]) <= MAX_MESSAGE_CHARS for cause in status["details"]["causes"])


def test_podgroup_updates_are_validated() -> None:
    old = podgroup(minMember=1)
    status = refusal(podgroup(minMember=2**31), "UPDATE", old)
    assert "spec.minMember" in status["message"]
    allowed = validate(admission_review(podgroup(minMember=2), "UPDATE", old), CTX)["response"]
    assert allowed["allowed"] is True


def test_the_quantity_parser_refuses_absurd_inputs_fast() -> None:
    for text in ("1e9999999", "1E-9999999", "1" * 10_000, "1e" + "9" * 60):
        started = time.monotonic()
        with pytest.raises(QuantityError):
            parse_quantity(text)
        assert time.monotonic() - started < 0.1
    # What admission refuses may still come from a cluster's other clients (a plain Pod): the
    # domain's conversion caps it as Kubernetes does, never past a BIGINT, never raising.
    assert to_milli("1Ei") == MAX_MILLI
    assert to_milli("1e9999999") == MAX_MILLI
    assert to_milli("-1e9999999") == -MAX_MILLI
    assert to_milli("1e-9999") == 1


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=30,
)
FIELDS = st.sampled_from(
    ["tasks", "queue", "minAvailable", "template", "replicas", "spec", "minMember", "minResources", "weight"]
)


@st.composite
def mangled(draw: st.DrawFn) -> dict[str, Any]:
    """A valid object of one of our kinds with arbitrary JSON put at a few of its known fields."""
    obj = copy.deepcopy(draw(st.sampled_from([job(), podgroup(queue="default"), queue("q", weight=1)])))
    for _ in range(draw(st.integers(1, 3))):
        target = draw(st.sampled_from(list(_known_parts(obj))))
        target[draw(FIELDS)] = draw(JSON)
    return obj


def _known_parts(obj: dict[str, Any]) -> Any:
    """The object, its spec, its first task and that task's template, where they are objects."""
    yield obj
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    yield spec
    tasks = spec.get("tasks")
    if isinstance(tasks, list) and tasks and isinstance(tasks[0], dict):
        yield tasks[0]
        if isinstance(tasks[0].get("template"), dict):
            yield tasks[0]["template"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obj=mangled(), operation=st.sampled_from(["CREATE", "UPDATE"]))
def test_admission_never_raises_on_any_shape(obj: dict[str, Any], operation: str) -> None:
    old = job() if obj["kind"] == "Job" else obj
    for webhook in (mutate, validate):
        response = webhook(admission_review(obj, operation, old), CTX)["response"]
        if not response["allowed"]:
            assert response["status"]["code"] in (400, 403, 413, 422)
            assert response["status"]["message"]


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=80) | st.integers() | st.floats())
def test_the_quantity_parser_raises_only_quantity_errors(text: str | int | float) -> None:
    with contextlib.suppress(QuantityError):
        to_milli(text)


@settings(max_examples=200, deadline=None)
@given(value=JSON, kind=st.sampled_from(["Job", "PodGroup", "Queue", "Command"]))
def test_the_schema_check_never_raises(value: Any, kind: str) -> None:
    for violation in schema.check(kind, {"metadata": {"name": "x"}, "spec": value, "action": value}):
        assert violation.field
        assert violation.message


def test_a_gang_that_can_never_fit_its_queue_is_refused_naming_the_queue() -> None:
    small = context(QueueAdmissionFacts("small", capability={"cpu": "4", "memory": "8Gi"}))
    template = {
        "spec": {"containers": [{"name": "m", "image": "b", "resources": {"requests": {"cpu": "1"}}}]}
    }
    never = job(tasks=[task(replicas=2_147_483_647, template=template)], queue="small", minAvailable=5)
    response = validate(admission_review(never), small)["response"]
    assert response["allowed"] is False
    message = response["status"]["message"]
    assert "queue `small`" in message
    assert "needs at least 5 cpu" in message
    assert "spec.minAvailable" in message
    fits = job(tasks=[task(replicas=2_147_483_647, template=template)], queue="small", minAvailable=4)
    assert validate(admission_review(fits), small)["response"]["allowed"] is True
