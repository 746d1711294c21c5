"""Accelerators in quota (#26 items 3 and 4): GPU models are distinct resource names that queues
limit, and DRA devices count as their class's resource, or as the name volcano-scheduler.conf's
`deviceClassMappings` gives a set of classes (as Kueue's), so DRA devices and device-plugin GPUs
of one model share one quota."""

from __future__ import annotations

import pytest

from services.scheduler.core import parse_conf
from services.scheduler.core.config import ConfError
from services.scheduler.core.devices import ClaimNeed, DeviceRequest
from tests.unit.scheduler.builders import gang, node, placed, plan, queue, request, running, task

pytestmark = pytest.mark.unit

A100 = "nvidia.com/gpu-a100"
H100 = "nvidia.com/gpu-h100"
CLASS = "deviceclass.resource.kubernetes.io/a100.nvidia.com"


def _conf(arguments: str = "") -> str:
    return f"""
actions: "enqueue, allocate, reclaim"
tiers:
- plugins: [{{name: priority}}, {{name: gang}}, {{name: conformance}}]
- plugins:
  - {{name: drf}}
  - {{name: predicates}}
  - name: capacity
    {arguments}
"""


MAPPED = parse_conf(
    _conf(f"arguments: {{deviceClassMappings: [{{name: {A100}, deviceClassNames: [a100.nvidia.com]}}]}}")
)
PLAIN = parse_conf(_conf())


def _claim(name: str) -> ClaimNeed:
    candidates = {"n-dra": tuple(("gpu.nvidia.com", "n-dra", f"gpu-{i}") for i in range(4))}
    return ClaimNeed("default", name, (DeviceRequest("gpu", "a100.nvidia.com", 1, False, candidates),))


def _dra_gang(name: str, size: int, queue_name: str) -> object:
    members = [
        task(f"{name}-{i}", request(**{CLASS: "1"}), device_claims=(_claim(f"{name}-{i}"),))
        for i in range(size)
    ]
    return gang(name, tasks=members, min_member=size, queue=queue_name)


def _nodes() -> list[object]:
    return [
        node(
            "n-dra", cpu="16", memory="64Gi", extra={CLASS: "4"}
        ),  # four DRA devices of class a100.nvidia.com
        node(
            "n-plugin", cpu="16", memory="64Gi", extra={A100: "4", H100: "4"}
        ),  # device-plugin GPUs by model
    ]


def test_a_queue_limits_each_gpu_model_apart() -> None:
    team = queue("team", capability={A100: "2"})
    result = plan(_nodes(), [gang("a100s", 3, request(**{A100: "1"}), queue="team")], [team], conf=PLAIN)
    assert placed(result) == {}
    verdict = result.verdict_for("a100s")
    assert verdict is not None
    assert "capability" in verdict.message or "quota" in verdict.detail
    result = plan(_nodes(), [gang("h100s", 3, request(**{H100: "1"}), queue="team")], [team], conf=PLAIN)
    assert len(placed(result)) == 3  # the A100 limit says nothing about H100s


def test_mapped_dra_devices_and_plugin_gpus_share_one_quota() -> None:
    team = queue("team", capability={A100: "3"})
    holding = running(gang("plugin", 2, request(**{A100: "1"}), queue="team"), ["n-plugin"])
    result = plan(_nodes(), [holding, _dra_gang("dra", 2, "team")], [team], conf=MAPPED)
    assert placed(result) == {}  # 2 held + 2 wanted > 3: the DRA gang waits on the same quota
    result = plan(_nodes(), [holding, _dra_gang("dra", 1, "team")], [team], conf=MAPPED)
    assert placed(result) == {"dra-0": "n-dra"}


def test_without_a_mapping_dra_devices_count_as_their_class() -> None:
    team = queue("team", capability={A100: "1", CLASS: "2"})
    result = plan(_nodes(), [_dra_gang("dra", 2, "team")], [team], conf=PLAIN)
    assert sorted(placed(result)) == ["dra-0", "dra-1"]
    result = plan(_nodes(), [_dra_gang("dra", 3, "team")], [team], conf=PLAIN)
    assert placed(result) == {}


def test_reclaim_takes_back_the_model_the_starving_queue_deserves() -> None:
    owner = queue("owner", deserved={"cpu": "16", A100: "2", H100: "0"})
    borrower = queue("borrower", deserved={"cpu": "16", A100: "2", H100: "4"})
    wide = running(gang("wide", 4, request(**{A100: "1"}), min_member=1, queue="borrower"), ["n-plugin"])
    h100s = running(gang("h100s", 4, request(**{H100: "1"}), min_member=1, queue="borrower"), ["n-plugin"])
    wants = gang("wants", 2, request(**{A100: "1"}), queue="owner")
    result = plan(_nodes(), [wide, h100s, wants], [owner, borrower], conf=PLAIN)
    victims = sorted(e.task_uid for e in result.evictions)
    assert len(victims) == 2
    assert all(v.startswith("wide-") for v in victims)  # by model: no H100 pod is taken


@pytest.mark.parametrize(
    ("argument", "says"),
    [
        ("{deviceClassMappings: nope}", "must be a list"),
        ("{deviceClassMappings: [{deviceClassNames: [a]}]}", "needs a resource name"),
        ("{deviceClassMappings: [{name: x, deviceClassNames: []}]}", "non-empty list of class names"),
        (
            "{deviceClassMappings: [{name: x, deviceClassNames: [a]}, {name: y, deviceClassNames: [a]}]}",
            "mapped twice",
        ),
    ],
)
def test_a_bad_mapping_is_refused_naming_the_rule(argument: str, says: str) -> None:
    with pytest.raises(ConfError, match=says):
        parse_conf(_conf(f"arguments: {argument}"))


def test_reclaim_frees_dra_devices_for_a_starving_queue() -> None:
    # borrower's four pods hold all four DRA devices of n-dra; owner deserves two of them.
    refs = [("gpu.nvidia.com", "n-dra", f"gpu-{i}") for i in range(4)]
    held = [
        task(
            f"wide-{i}",
            request(**{CLASS: "1"}),
            node="n-dra",
            status="Running",
            device_claims=(ClaimNeed("default", f"wide-{i}", allocated_node="n-dra", held=(refs[i],)),),
        )
        for i in range(4)
    ]
    wide = gang("wide", tasks=held, min_member=1, queue="borrower", phase="Running")
    owner = queue("owner", deserved={"cpu": "16", CLASS: "2"})
    borrower = queue("borrower", deserved={"cpu": "16", CLASS: "2"})
    result = plan(
        _nodes(),
        [wide, _dra_gang("wants", 2, "owner")],
        [owner, borrower],
        conf=PLAIN,
        devices_taken=frozenset(refs),
    )
    assert len([e for e in result.evictions if e.reason == "reclaim"]) == 2
    # The owner's pods wait on n-dra for the devices being freed (nominated there), none bound yet.
    assert placed(result) == {}
    assert {n.node for n in result.nominations} == {"n-dra"}
