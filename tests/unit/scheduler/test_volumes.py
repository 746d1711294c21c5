"""The VolumeBinding filter (#16): a pod whose claim is bound to a volume with node affinity fits
only where that affinity admits; an unbound WaitForFirstConsumer claim fits only where an
Available volume of its class would match; an unbound Immediate claim keeps the pod waiting with
kube-scheduler's message; and a gang goes whole or not at all."""

from __future__ import annotations

from typing import Any

import pytest

from services.scheduler.core.volumes import (
    NO_VOLUME_TO_BIND,
    UNBOUND_IMMEDIATE,
    VOLUME_NODE_CONFLICT,
    ClaimInfo,
    VolumeInfo,
    volume_needs,
)
from tests.unit.scheduler.builders import conf_with, gang, node, placed, plan, task

pytestmark = pytest.mark.unit

CONF = conf_with("predicates", "proportion", "nodeorder")
GIB = 1024**3 * 1000  # storage in milli-units, as Resources counts it
RWO = frozenset({"ReadWriteOnce"})
MODES = {"local": "WaitForFirstConsumer", "fast": "Immediate"}


def _on(disk: str) -> tuple[dict[str, Any], ...]:
    return ({"matchExpressions": [{"key": "disk", "operator": "In", "values": [disk]}]},)


def _volume(name: str, disk: str | None, size: int = 10, **fields: Any) -> VolumeInfo:
    terms = _on(disk) if disk is not None else None
    return VolumeInfo(name, fields.pop("storage_class", "local"), size * GIB, RWO, node_terms=terms, **fields)


def _claim(name: str, storage_class: str = "local", size: int = 1, **fields: Any) -> ClaimInfo:
    return ClaimInfo("default", name, storage_class, access_modes=RWO, request=size * GIB, **fields)


def _nodes() -> list[Any]:
    return [node(f"n-{disk}", cpu="8", labels={"disk": disk}) for disk in ("a", "b", "c")]


def _needs(claims: list[ClaimInfo], volumes: list[VolumeInfo], names: list[str] | None = None) -> Any:
    by_key = {(c.namespace, c.name): c for c in claims}
    return volume_needs("default", names or [c.name for c in claims], by_key, volumes, MODES)


def test_a_pod_whose_claim_is_bound_to_a_local_volume_goes_to_that_volumes_node() -> None:
    needs = _needs([_claim("data", volume_name="pv-b")], [_volume("pv-a", "a"), _volume("pv-b", "b")])
    result = plan(_nodes(), [gang("job", 1, task_fields={"volume_needs": needs})], conf=CONF)
    assert placed(result) == {"job-worker-0": "n-b"}


def test_a_wait_for_first_consumer_claim_fits_only_where_a_matching_volume_is() -> None:
    volumes = [
        _volume("small-a", "a", size=1),  # too small for 5Gi
        _volume("claimed-b", "b", claimed_by=("default", "other")),
        _volume("fits-c", "c"),
        _volume("wrong-class-a", "a", storage_class="fast"),
    ]
    needs = _needs([_claim("data", size=5)], volumes)
    result = plan(_nodes(), [gang("job", 1, task_fields={"volume_needs": needs})], conf=CONF)
    assert placed(result) == {"job-worker-0": "n-c"}


def test_a_volume_every_node_reaches_asks_nothing_of_the_node() -> None:
    assert _needs([_claim("data")], [_volume("network", None)]) == ()


def test_with_no_matching_volume_the_gang_waits_and_says_why() -> None:
    needs = _needs([_claim("data", size=50)], [_volume("pv-a", "a")])
    result = plan(_nodes(), [gang("job", 1, task_fields={"volume_needs": needs})], conf=CONF)
    assert placed(result) == {}
    verdict = result.verdict_for("job")
    assert verdict is not None
    assert f"3 {NO_VOLUME_TO_BIND}" in verdict.message


def test_an_unbound_immediate_claim_keeps_the_pod_waiting_on_every_node() -> None:
    needs = _needs([_claim("data", storage_class="fast")], [_volume("pv-a", None, storage_class="fast")])
    result = plan(_nodes(), [gang("job", 1, task_fields={"volume_needs": needs})], conf=CONF)
    assert placed(result) == {}
    verdict = result.verdict_for("job")
    assert verdict is not None
    assert f"3 {UNBOUND_IMMEDIATE}" in verdict.message


def test_a_missing_claim_fails_with_its_name() -> None:
    (need,) = _needs([], [], names=["ghost"])
    assert need.reason == 'persistentvolumeclaim "ghost" not found'


def test_a_gang_places_all_or_none_when_one_members_volume_is_unreachable() -> None:
    reachable = _needs([_claim("data-0", volume_name="pv-a")], [_volume("pv-a", "a")])
    # pv-z's node does not exist: the member cannot be placed anywhere, so neither is the other.
    unreachable = _needs([_claim("data-1", volume_name="pv-z")], [_volume("pv-z", "z")])
    members = [task("job-0", volume_needs=reachable), task("job-1", volume_needs=unreachable)]
    result = plan(_nodes(), [gang("job", tasks=members, min_member=2)], conf=CONF)
    assert placed(result) == {}
    verdict = result.verdict_for("job")
    assert verdict is not None
    assert VOLUME_NODE_CONFLICT in verdict.message
