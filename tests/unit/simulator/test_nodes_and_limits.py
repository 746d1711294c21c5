from __future__ import annotations

from typing import Any

import pytest

from services.simulator.admission.ratelimit import TokenBucket
from services.simulator.kubelets.nodes import NodeFileError, parse_node_entries
from services.simulator.kubelets.pod_status import admit
from shared.domain.resources import Resources

pytestmark = pytest.mark.unit


def test_node_entries_expand_prefixes_and_carry_every_field() -> None:
    specs = parse_node_entries(
        [
            {
                "namePrefix": "gpu-",
                "count": 2,
                "cpu": "16",
                "memory": "64Gi",
                "gpu": 4,
                "pods": 20,
                "extended": {"example.com/fpga": 2},
                "labels": {"zone": "a"},
                "taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}],
            },
            {"name": "small", "cpu": "2"},
        ]
    )
    assert [s.name for s in specs] == ["gpu-0", "gpu-1", "small"]
    assert specs[0].capacity() == {
        "cpu": "16",
        "memory": "64Gi",
        "pods": "20",
        "ephemeral-storage": "100Gi",
        "nvidia.com/gpu": "4",
        "example.com/fpga": "2",
    }
    assert specs[2].memory == "32Gi"


@pytest.mark.parametrize(
    "entries",
    [
        {"name": "x"},
        [{"name": "x", "cpus": "4"}],
        [{"namePrefix": "n-"}],
        [{"name": "x", "cpu": "lots"}],
        [{"name": "x"}, {"name": "x"}],
        [{"name": "x", "taints": [{"key": "k", "effect": "Sometimes"}]}],
    ],
    ids=[
        "not-a-list",
        "unknown-field",
        "prefix-without-count",
        "bad-quantity",
        "duplicate",
        "bad-taint-effect",
    ],
)
def test_bad_node_files_are_refused(entries: Any) -> None:
    with pytest.raises(NodeFileError):
        parse_node_entries(entries)


@pytest.mark.parametrize(
    ("requests", "used", "reason"),
    [
        ({"cpu": "1"}, {"cpu": "3"}, None),
        ({"cpu": "2"}, {"cpu": "3"}, "OutOfcpu"),
        ({"memory": "5Gi"}, {}, "OutOfmemory"),
        ({"nvidia.com/gpu": "1"}, {}, "OutOfnvidia.com/gpu"),
    ],
    ids=["fits", "cpu", "memory", "gpu"],
)
def test_kubelet_admission(requests: dict[str, str], used: dict[str, str], reason: str | None) -> None:
    refusal = admit(
        Resources.parse(requests), Resources.parse(used), Resources.parse({"cpu": "4", "memory": "4Gi"})
    )
    assert (refusal.reason if refusal else None) == reason


def test_token_bucket_allows_a_burst_then_spaces_requests_by_the_rate() -> None:
    now = [0.0]
    bucket = TokenBucket(qps=10, burst=3, clock=lambda: now[0])
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)
    now[0] = 10.0
    assert bucket.reserve() == 0.0
