"""DRA device allocation in the scheduling core (#26 item 4): CEL selectors of the class and the
request pick the devices, counts and allocationMode All are honoured, a device serves one claim,
a gang is placed only where all its claims fit together, and a claim no node could ever satisfy
leaves the gang waiting with a reason that says so."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from services.scheduler.core.device_selectors import compile_problem, device_activation, matches
from services.scheduler.core.devices import (
    CANNOT_ALLOCATE,
    DEVICE_CLAIM_UNSATISFIABLE,
    ClaimNeed,
    DeviceClassInfo,
    DeviceInfo,
    DeviceRequest,
    allocate,
    device_counts,
    matching_devices,
    never_satisfiable,
)
from shared.domain.quantity import to_milli
from tests.unit.scheduler.builders import conf_with, gang, node, placed, plan, queue, request, task

pytestmark = pytest.mark.unit

DRIVER = "gpu.example.com"
CLASS = f'device.driver == "{DRIVER}"'
CONF = conf_with("predicates", "proportion", "nodeorder")


def _gpu(node_name: str, index: int, model: str = "a100", memory: str = "80Gi") -> DeviceInfo:
    return DeviceInfo(
        DRIVER,
        node_name,
        f"gpu-{index}",
        node_name,
        attributes={f"{DRIVER}/model": model, f"{DRIVER}/index": index},
        capacity={f"{DRIVER}/memory": to_milli(memory)},
    )


def _cluster() -> list[DeviceInfo]:
    # n-a: two a100s; n-b: one a100 and one h100 with 40Gi; n-c: none.
    return [_gpu("n-a", 0), _gpu("n-a", 1), _gpu("n-b", 0), _gpu("n-b", 1, "h100", "40Gi")]


def _claim(name: str, *selectors: str, count: int = 1, all_devices: bool = False) -> ClaimNeed:
    candidates = matching_devices(_cluster(), [CLASS, *selectors])
    request = DeviceRequest("gpu", "gpus", count, all_devices, candidates)
    return ClaimNeed("default", name, (request,))


def _nodes() -> list[object]:
    return [node(n, cpu="8") for n in ("n-a", "n-b", "n-c")]


def test_class_and_request_selectors_are_cel_over_attributes_and_capacity() -> None:
    device = device_activation(DRIVER, {f"{DRIVER}/model": "a100", "other.io/rack": "r1"}, {"memory": 80_000})
    assert matches([CLASS, 'device.attributes["gpu.example.com"].model == "a100"'], device)
    assert matches(['device.attributes["other.io"].rack == "r1"'], device)
    assert matches(['device.capacity["gpu.example.com"].memory.compareTo(quantity("40")) > 0'], device)
    assert matches(['device.capacity["gpu.example.com"].memory == quantity("80")'], device)
    assert not matches(['device.attributes["gpu.example.com"].model == "h100"'], device)
    # Reading an attribute the device lacks is a run-time error: the device does not match.
    assert not matches(['device.attributes["gpu.example.com"].missing == "x"'], device)


def test_an_expression_that_does_not_compile_is_named() -> None:
    problem = compile_problem("device.driver ==")
    assert problem is not None
    assert "device.driver ==" in problem
    assert compile_problem(CLASS) is None


def test_matching_devices_are_grouped_by_node() -> None:
    found = matching_devices(_cluster(), [CLASS, 'device.attributes["gpu.example.com"].model == "a100"'])
    assert found == {
        "n-a": ((DRIVER, "n-a", "gpu-0"), (DRIVER, "n-a", "gpu-1")),
        "n-b": ((DRIVER, "n-b", "gpu-0"),),
    }


def test_count_devices_are_allocated_and_taken_devices_are_skipped() -> None:
    claim = _claim("c", count=2)
    results = allocate([claim], "n-a", set())
    assert results is not None
    assert [(r.claim_name, r.request, r.pool, r.device) for r in results] == [
        ("c", "gpu", "n-a", "gpu-0"),
        ("c", "gpu", "n-a", "gpu-1"),
    ]
    assert allocate([claim], "n-a", {(DRIVER, "n-a", "gpu-0")}) is None
    assert allocate([claim], "n-c", set()) is None


def test_two_claims_of_one_pod_never_share_a_device() -> None:
    claims = [_claim("one"), _claim("two")]
    results = allocate(claims, "n-b", set())
    assert results is not None
    assert len({r.ref for r in results}) == 2
    assert allocate([*claims, _claim("three")], "n-b", set()) is None


def test_allocation_mode_all_takes_every_matching_device_and_needs_them_all_free() -> None:
    claim = _claim("all", all_devices=True)
    results = allocate([claim], "n-b", set())
    assert results is not None
    assert len(results) == 2
    assert allocate([claim], "n-b", {(DRIVER, "n-b", "gpu-1")}) is None
    assert allocate([claim], "n-c", set()) is None  # All needs at least one device


def test_an_allocated_claim_ties_the_pod_to_its_node() -> None:
    claim = ClaimNeed("default", "done", allocated_node="n-b", held=((DRIVER, "n-b", "gpu-0"),))
    assert allocate([claim], "n-b", {(DRIVER, "n-b", "gpu-0")}) == ()
    assert allocate([claim], "n-a", set()) is None


def test_a_pod_goes_where_its_selectors_find_a_device() -> None:
    need = _claim("c", 'device.attributes["gpu.example.com"].model == "h100"')
    result = plan(_nodes(), [gang("job", 1, task_fields={"device_claims": (need,)})], conf=CONF)
    assert placed(result) == {"job-worker-0": "n-b"}
    (bind,) = result.binds[0].binds
    assert [(r.claim_name, r.pool, r.device) for r in bind.devices] == [("c", "n-b", "gpu-1")]


def test_a_gang_shares_out_devices_and_no_device_goes_twice() -> None:
    members = [task(f"job-{i}", device_claims=(_claim(f"c-{i}"),)) for i in range(4)]
    result = plan(_nodes(), [gang("job", tasks=members, min_member=4)], conf=CONF)
    (binds,) = result.binds
    given = [r.ref for b in binds.binds for r in b.devices]
    assert len(given) == 4
    assert len(set(given)) == 4
    assert {b.node for b in binds.binds} == {"n-a", "n-b"}


def test_devices_already_taken_in_the_cluster_are_not_given_again() -> None:
    members = [task(f"job-{i}", device_claims=(_claim(f"c-{i}"),)) for i in range(2)]
    taken = frozenset({(DRIVER, "n-a", "gpu-0"), (DRIVER, "n-a", "gpu-1")})
    result = plan(_nodes(), [gang("job", tasks=members, min_member=2)], conf=CONF, devices_taken=taken)
    assert placed(result) == {"job-0": "n-b", "job-1": "n-b"}


def test_a_gang_is_placed_only_where_all_its_claims_fit_together() -> None:
    # Five single-device claims and four devices: no member is bound, the devices stay free.
    members = [task(f"job-{i}", device_claims=(_claim(f"c-{i}"),)) for i in range(5)]
    result = plan(_nodes(), [gang("job", tasks=members, min_member=5)], conf=CONF)
    assert placed(result) == {}
    verdict = result.verdict_for("job")
    assert verdict is not None
    assert CANNOT_ALLOCATE in verdict.message
    # It may fit later, when devices come free: not "never".
    assert verdict.reason != DEVICE_CLAIM_UNSATISFIABLE


def test_a_claim_no_node_could_ever_satisfy_waits_with_a_reason_that_says_so() -> None:
    need = _claim("big", 'device.attributes["gpu.example.com"].model == "a100"', count=3)
    result = plan(_nodes(), [gang("job", 1, task_fields={"device_claims": (need,)})], conf=CONF)
    assert placed(result) == {}
    verdict = result.verdict_for("job")
    assert verdict is not None
    assert verdict.reason == DEVICE_CLAIM_UNSATISFIABLE
    assert 'resourceclaim "default/big" can never be allocated' in verdict.message
    assert "the most any node has is 2" in verdict.message


def test_a_missing_claim_or_class_is_the_reason_given() -> None:
    need = ClaimNeed("default", "ghost", problem='resourceclaim "default/ghost" not found')
    assert never_satisfiable([need], ["n-a"]) == 'resourceclaim "default/ghost" not found'
    result = plan(_nodes(), [gang("job", 1, task_fields={"device_claims": (need,)})], conf=CONF)
    verdict = result.verdict_for("job")
    assert verdict is not None
    assert verdict.reason == DEVICE_CLAIM_UNSATISFIABLE
    assert "ghost" in verdict.message


def _counted(claims: Sequence[tuple[str, int]]) -> dict[str, int]:
    classes = {"a100": DeviceClassInfo("a100", resource="nvidia.com/gpu-a100")}
    return device_counts(claims, classes)


def test_devices_count_as_the_queue_resource_their_class_names() -> None:
    assert _counted([("a100", 2), ("a100", 1), ("other", 1)]) == {
        "nvidia.com/gpu-a100": 3,
        "deviceclass.resource.kubernetes.io/other": 1,
    }


def test_a_hopeless_claim_is_the_reason_even_when_the_queue_is_also_full() -> None:
    need = _claim("big", count=3)
    device_quota = "deviceclass.resource.kubernetes.io/gpus"
    members = [task("job-0", request(**{device_quota: "3"}), device_claims=(need,))]
    tight = queue("default", capability={"cpu": "1", device_quota: "1"})
    result = plan(_nodes(), [gang("job", tasks=members, min_member=1)], [tight], conf=CONF)
    verdict = result.verdict_for("job")
    assert verdict is not None
    assert verdict.reason == DEVICE_CLAIM_UNSATISFIABLE
    assert "can never be allocated" in verdict.message
