"""What a cycle's plan becomes on commit: decision rows, verdict rows and events (core/cycle_records.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from services.scheduler.core.cycle_records import CycleStamp, cycle_records
from services.scheduler.core.plan import Bind, CyclePlan, Eviction, GangBinds, GangVerdict
from shared.messages.audit import AuditRecorded
from tests.unit.scheduler.builders import NOW, gang, node, running, snapshot

pytestmark = pytest.mark.unit

STAMP = CycleStamp(epoch=3, cycle=7, valid_until=NOW + timedelta(seconds=30))
TRAIN = gang("train", 2)
LOW = running(gang("low", 2, priority=1), ["n1"])
SNAPSHOT = snapshot([node("n1"), node("n2")], [TRAIN, LOW])


def verdict(
    gang_uid: str, message: str = "0/2 nodes are unavailable", reason: str = "NotEnoughResources"
) -> GangVerdict:
    return GangVerdict(gang_uid=gang_uid, namespace="default", name=gang_uid, reason=reason, message=message)


def test_a_placed_gang_is_one_row_per_pod_and_one_message_with_its_audit() -> None:
    binds = tuple(Bind(t.uid, t.namespace, t.name, "n2") for t in TRAIN.tasks)
    records = cycle_records(CyclePlan(binds=(GangBinds("train", binds),)), SNAPSHOT, {}, STAMP)

    assert [(r["kind"], r["pod_uid"], r["node"], r["epoch"], r["cycle"]) for r in records.decisions] == [
        ("bind", "train-worker-0", "n2", 3, 7),
        ("bind", "train-worker-1", "n2", 3, 7),
    ]
    assert records.placed_gang_uids == ["train"]
    (subject, placed), (audit_subject, audit) = records.events
    assert subject.startswith("decisions.")
    assert placed.id == "3:7:placed:train"
    assert [b.name for b in placed.data.binds] == ["train-worker-0", "train-worker-1"]
    assert placed.data.valid_until == STAMP.valid_until
    assert audit.id == "audit:3:7:placed:train"
    assert audit_subject.startswith("audit.")
    assert audit.data.details == {
        "queue": "default",
        "pods": {"train-worker-0": "n2", "train-worker-1": "n2"},
    }


def test_evictions_are_grouped_by_victim_gang_and_name_the_preemptor() -> None:
    evictions = tuple(Eviction(t.uid, t.namespace, t.name, "n1", "preempt", "train") for t in LOW.tasks)
    records = cycle_records(CyclePlan(evictions=evictions), SNAPSHOT, {}, STAMP)

    assert [(r["kind"], r["gang_uid"], r["pod_uid"]) for r in records.decisions] == [
        ("evict", "low", "low-worker-0"),
        ("evict", "low", "low-worker-1"),
    ]
    (_, evicted), (_, audit) = records.events
    assert evicted.data.preemptor == "train"
    assert len(evicted.data.evictions) == 2
    assert audit.data.reason == "preempt"
    assert audit.data.details["preemptor_name"] == "default/train"


def test_a_gang_release_is_announced_as_a_release() -> None:
    evictions = (Eviction("low-worker-0", "default", "low-worker-0", "n1", "gang-release"),)
    records = cycle_records(CyclePlan(evictions=evictions), SNAPSHOT, {}, STAMP)
    assert records.events[0][1].data.evictions[0].reason == "release"


def test_an_unchanged_verdict_is_neither_written_nor_announced() -> None:
    plan = CyclePlan(verdicts=(verdict("train"),))
    recorded = {"train": ("NotEnoughResources", "0/2 nodes are unavailable", "default")}
    records = cycle_records(plan, SNAPSHOT, recorded, STAMP)
    assert records.verdicts == []
    assert records.events == []


def test_a_verdict_whose_reason_changed_but_not_its_message_is_written_not_announced() -> None:
    plan = CyclePlan(verdicts=(verdict("train", reason="QueueClosed"),))
    recorded = {"train": ("NotEnoughResources", "0/2 nodes are unavailable", "default")}
    records = cycle_records(plan, SNAPSHOT, recorded, STAMP)
    assert [(r["gang_uid"], r["reason"], r["cycle"]) for r in records.verdicts] == [
        ("train", "QueueClosed", 7)
    ]
    assert records.events == []


def test_a_new_verdict_is_written_and_announced_pending() -> None:
    records = cycle_records(CyclePlan(verdicts=(verdict("train"), verdict("gone"))), SNAPSHOT, {}, STAMP)
    assert [r["gang_uid"] for r in records.verdicts] == ["train"]  # a gang not in the snapshot is skipped
    (_, unschedulable), (_, audit) = records.events
    assert unschedulable.id == "3:7:unschedulable:train"
    assert audit.data.outcome == "pending"
    assert audit.data.message == "0/2 nodes are unavailable"


def test_a_configuration_load_rides_with_the_cycle_and_tracing_is_the_callers() -> None:
    news = AuditRecorded(
        service="scheduler", action="configuration-loaded", kind="File", name="/conf", outcome="done"
    )
    seen: list[str] = []

    def trace(name: str, annotations: object, attributes: object) -> str:
        seen.append(name)
        return "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

    records = cycle_records(
        CyclePlan(enqueued=("train",)), SNAPSHOT, {}, STAMP, conf_news=news, trace_step=trace
    )
    assert seen == ["scheduler: enqueued"]
    assert [e.id for _, e in records.events] == [
        "3:7:enqueued:train",
        "audit:3:7:enqueued:train",
        "audit:3:7:configuration-loaded",
    ]
    assert records.events[0][1].traceparent == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    assert [r["kind"] for r in records.decisions] == ["enqueue"]


def test_a_gang_enqueued_and_placed_in_one_cycle_is_announced_once_with_both_on_its_audit() -> None:
    binds = tuple(Bind(t.uid, t.namespace, t.name, "n2") for t in TRAIN.tasks)
    plan = CyclePlan(enqueued=("train",), binds=(GangBinds("train", binds),))
    records = cycle_records(plan, SNAPSHOT, {}, STAMP)

    # The enqueue row stays: the snapshot counts the gang admitted until its PodGroup says so.
    assert [r["kind"] for r in records.decisions] == ["enqueue", "bind", "bind"]
    assert [e.id for _, e in records.events] == ["3:7:placed:train", "audit:3:7:placed:train"]
    assert records.events[1][1].data.details["enqueued"] is True


def test_a_gang_enqueued_but_not_placed_is_still_announced() -> None:
    records = cycle_records(CyclePlan(enqueued=("train",)), SNAPSHOT, {}, STAMP)
    assert [e.id for _, e in records.events] == ["3:7:enqueued:train", "audit:3:7:enqueued:train"]
    assert "enqueued" not in records.events[1][1].data.details
