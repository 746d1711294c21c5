"""The controller's sharding core: every object of one job has one key, and the shards are shared
out evenly, each held by one replica, as replicas join and leave."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.controller.core.sharding import (
    CLUSTER_KEY,
    ShardRow,
    decision_key,
    fair_share,
    job_key,
    plan_shards,
    shard_of,
)

pytestmark = pytest.mark.unit


def _meta(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": "team-a", "uid": f"uid-{name}", **extra}


def _owned_by(kind: str, name: str) -> list[dict[str, Any]]:
    return [{"kind": kind, "name": name, "uid": f"uid-{name}", "controller": True}]


def test_every_object_of_a_volcano_job_has_the_job_s_key() -> None:
    job = {"metadata": _meta("train")}
    podgroup = {"metadata": _meta("train-1a2b3c4d", ownerReferences=_owned_by("Job", "train"))}
    pod = {
        "metadata": _meta(
            "train-worker-0",
            ownerReferences=_owned_by("Job", "train"),
            annotations={"scheduling.k8s.io/group-name": "train-1a2b3c4d"},
        )
    }
    command = {"metadata": _meta("abort-it"), "target": {"kind": "Job", "name": "train"}}
    keys = {
        job_key("Job", job),
        job_key("PodGroup", podgroup),
        job_key("Pod", pod),
        job_key("Command", command),
        decision_key("team-a", podgroup, "train-1a2b3c4d"),
    }
    assert keys == {("team-a", "train")}


def test_a_plain_pod_has_the_key_of_the_podgroup_it_is_given_before_and_after_grouping() -> None:
    owner = _owned_by("ReplicaSet", "web-5d")
    before = {"metadata": _meta("web-5d-x", ownerReferences=owner)}
    grouped = {"scheduling.k8s.io/group-name": "podgroup-uid-web-5d"}
    after = {"metadata": _meta("web-5d-x", ownerReferences=owner, annotations=grouped)}
    replica_set = {"metadata": _meta("web-5d")}
    podgroup = {"metadata": _meta("podgroup-uid-web-5d", ownerReferences=owner)}
    assert (
        job_key("Pod", before)
        == job_key("Pod", after)
        == job_key("ReplicaSet", replica_set)
        == job_key("PodGroup", podgroup)
        == ("team-a", "podgroup-uid-web-5d")
    )
    orphan = {"metadata": _meta("lonely")}
    assert job_key("Pod", orphan) == ("team-a", "podgroup-uid-lonely")


def test_queues_and_queue_commands_are_cluster_scoped_work() -> None:
    assert job_key("Queue", {"metadata": {"name": "q1"}}) == CLUSTER_KEY
    close = {"metadata": _meta("close-q1"), "target": {"kind": "Queue", "name": "q1"}}
    assert job_key("Command", close) == CLUSTER_KEY


def test_a_decision_about_a_podgroup_not_seen_yet_is_keyed_by_the_podgroup() -> None:
    assert decision_key("team-a", None, "pg-1") == ("team-a", "pg-1")


@given(st.text(max_size=20), st.text(max_size=40), st.integers(1, 256))
def test_a_key_always_maps_to_the_same_shard_within_range(namespace: str, name: str, shards: int) -> None:
    shard = shard_of((namespace, name), shards)
    assert 0 <= shard < shards
    assert shard == shard_of((namespace, name), shards)


def test_the_shard_hash_is_fixed_across_runs() -> None:
    # Replicas of different versions, or restarted with another PYTHONHASHSEED, must agree.
    assert shard_of(("default", "hello-gang"), 16) == shard_of(("default", "hello-gang"), 16)
    assert [shard_of(("default", f"job-{i}"), 16) for i in range(4)] == [
        shard_of(("default", f"job-{i}"), 16) for i in range(4)
    ]
    assert shard_of(("default", "hello-gang"), 16) == 9  # CRC-32, not Python's salted hash()


@given(st.integers(1, 64), st.integers(1, 10))
def test_fair_shares_add_up_to_every_shard_and_differ_by_at_most_one(shards: int, members: int) -> None:
    parts = [fair_share(shards, members, rank) for rank in range(members)]
    assert sum(parts) == shards
    assert max(parts) - min(parts) <= 1


def _rows(holders: list[str], expired: set[int] = frozenset()) -> list[ShardRow]:  # type: ignore[assignment]
    return [ShardRow(i, holder, i in expired) for i, holder in enumerate(holders)]


def test_a_lone_replica_takes_every_free_shard() -> None:
    plan = plan_shards(_rows([""] * 4, expired={0, 1, 2, 3}), "a", {"a"})
    assert plan.take == {0, 1, 2, 3}
    assert plan.give_back == set()


def test_when_a_replica_joins_the_holder_gives_back_down_to_its_fair_part() -> None:
    rows = _rows(["a"] * 4)
    plan = plan_shards(rows, "a", {"a", "b"})
    assert plan.give_back == {2, 3}
    # The newcomer takes nothing held and unexpired...
    assert plan_shards(rows, "b", {"a", "b"}).take == set()
    # ...and what was given back once it is free.
    assert plan_shards(_rows(["a", "a", "a", "a"], expired={2, 3}), "b", {"a", "b"}).take == {2, 3}


def test_when_a_replica_dies_the_survivors_take_its_expired_shards() -> None:
    holders, expired = ["a", "a", "b", "b", "c", "c"], {4, 5}
    for me in ("a", "b"):  # one after the other, as the row locks order them
        for shard in plan_shards(_rows(holders, expired), me, {"a", "b"}).take:
            holders[shard] = me
            expired.discard(shard)
    assert holders.count("a") == holders.count("b") == 3


@given(st.integers(1, 32), st.lists(st.sampled_from("abcde"), min_size=1, max_size=5, unique=True))
def test_replicas_that_keep_renewing_settle_on_every_shard_held_once(shards: int, members: list[str]) -> None:
    holders = [""] * shards
    expired = set(range(shards))
    live = set(members)
    for _ in range(4):  # rounds of every member renewing in turn
        for me in members:
            plan = plan_shards(_rows(holders, expired), me, live)
            for shard in plan.give_back:
                expired.add(shard)
            for shard in plan.take:
                holders[shard] = me
                expired.discard(shard)
    assert not expired
    counts = [holders.count(m) for m in members]
    assert sum(counts) == shards
    assert max(counts) - min(counts) <= 1
