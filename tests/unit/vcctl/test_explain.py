"""`job why`'s pure part: which blockers it names, in which order, and what it says would help."""

from __future__ import annotations

import pytest

from phalanx.vcctl import explain

pytestmark = pytest.mark.unit
CPU = 1000  # milli-units


def gang(**changes: object) -> explain.GangFacts:
    base: dict[str, object] = {
        "namespace": "default",
        "name": "train",
        "queue": "team-a",
        "phase": "Pending",
        "priority": 0,
        "min_member": 3,
        "placed": 0,
        "valid": 3,
        "need": {"cpu": 6 * CPU},
        "task_request": {"cpu": 2 * CPU},
    }
    base.update(changes)
    return explain.GangFacts(**base)  # type: ignore[arg-type]


def queue(**changes: object) -> explain.QueueFacts:
    base: dict[str, object] = {
        "name": "team-a",
        "state": "Open",
        "weight": 1,
        "capability": {},
        "allocated": {},
        "admitted": {},
        "deserved": None,
        "share": 0.0,
    }
    base.update(changes)
    return explain.QueueFacts(**base)  # type: ignore[arg-type]


def facts(verdict: explain.Verdict, **changes: object) -> explain.Facts:
    base: dict[str, object] = {"job": "Job default/train", "job_phase": "Pending", "recorded": verdict}
    base.update(changes)
    return explain.Facts(**base)  # type: ignore[arg-type]


def test_fit_errors_are_read_as_counts_per_predicate() -> None:
    total, failing = explain.predicates(
        "Origin reason is w-0: 0/5 nodes are unavailable: 2 Insufficient cpu, "
        "3 node(s) had untolerated taint."
    )
    assert total == 5
    assert failing == [(2, "Insufficient cpu"), (3, "node(s) had untolerated taint")]
    assert explain.predicates("queue resource quota insufficient") == (0, [])


def test_capability_says_used_over_limit_and_how_much_more_is_needed() -> None:
    verdict = explain.Verdict(
        "QueueCapabilityExceeded", "queue resource quota insufficient: insufficient cpu"
    )
    found = explain.blockers(
        facts(verdict, gang=gang(), queue=queue(capability={"cpu": 8 * CPU}, allocated={"cpu": 4 * CPU}))
    )
    assert [b.kind for b in found] == ["capability"]
    assert found[0].says == "queue team-a: cpu used 4/8 (capability), the job needs 6"
    assert found[0].fix.startswith("needs 2 more cpu in queue team-a")


def test_a_closed_queue_comes_first_and_says_how_to_open_it() -> None:
    verdict = explain.Verdict("QueueClosed", "queue team-a is Closed")
    found = explain.blockers(
        facts(verdict, gang=gang(), queue=queue(state="Closed", capability={"cpu": 2 * CPU}))
    )
    assert [b.kind for b in found] == ["queue-state", "capability"]
    assert found[0].fix == "open it: vcctl queue operate -n team-a -a open"


def test_nodes_that_are_all_too_small_are_named_as_such() -> None:
    verdict = explain.Verdict(
        "NotEnoughResources", "...", fit_errors="0/4 nodes are unavailable: 4 Insufficient cpu."
    )
    found = explain.blockers(facts(verdict, gang=gang(), queue=queue(), nodes_total=4, nodes_could_hold=0))
    assert [b.kind for b in found] == ["nodes"]
    assert found[0].says == "nodes: 4 checked, 4 fail Insufficient cpu"
    assert "waits for 3 node(s) that can each hold cpu=2" in found[0].fix


def test_nodes_with_room_later_say_the_pods_wait_for_room() -> None:
    verdict = explain.Verdict(
        "NotEnoughResources", "...", fit_errors="0/4 nodes are unavailable: 4 Insufficient cpu."
    )
    found = explain.blockers(
        facts(verdict, gang=gang(placed=1), queue=queue(), nodes_total=4, nodes_could_hold=4)
    )
    assert found[0].fix.startswith("waits for room for 2 more pod(s) of cpu=2")


def test_higher_priority_gangs_are_named_with_what_they_hold() -> None:
    verdict = explain.Verdict("NotEnoughResources", "...")
    ahead = (explain.Ahead("default", "urgent", 1000, "Running", {"cpu": 28 * CPU}),)
    found = explain.blockers(facts(verdict, gang=gang(), queue=queue(), ahead=ahead))
    assert [b.kind for b in found] == ["priority"]
    assert (
        found[0].says
        == "ahead in queue team-a (priority 0): default/urgent (priority 1000, Running, holds cpu=28)"
    )


def test_a_gang_below_its_minimum_says_how_many_pods_are_missing() -> None:
    verdict = explain.Verdict(
        "NotEnoughTasks", "Not enough valid tasks for gang-scheduling, valid: 2, min: 3"
    )
    found = explain.blockers(facts(verdict, gang=gang(valid=2), queue=queue()))
    assert [b.kind for b in found] == ["minimum"]
    assert found[0].fix == "create 1 more pod(s) of the gang, or lower its minAvailable to 2"


def test_the_fair_share_is_named_only_when_the_scheduler_says_so() -> None:
    at_share = queue(deserved={"cpu": 4 * CPU}, allocated={"cpu": 4 * CPU}, share=1.0)
    other = explain.blockers(facts(explain.Verdict("NotEnoughResources", "..."), gang=gang(), queue=at_share))
    assert [b.kind for b in other] == []
    overused = explain.blockers(facts(explain.Verdict("QueueOverused", "..."), gang=gang(), queue=at_share))
    assert [b.kind for b in overused] == ["share"]
    assert "cpu allocated 4/4 deserved" in overused[0].says


def test_a_running_job_is_said_to_have_nothing_in_its_way() -> None:
    text = explain.render(explain.Facts(job="Job default/train", job_phase="Running"))
    assert (
        text
        == "Job default/train: Running\nNothing blocks it: the scheduler records no verdict for its gang."
    )


def test_a_claim_that_can_never_be_allocated_is_named_with_what_would_help() -> None:
    never = (
        'resourceclaim "default/train-gpu-ab12c" can never be allocated: request "gpu" asks for 3 '
        'device(s) of class "gpu.example.com" that its selectors admit, and the most any node has is 2'
    )
    message = f"1/1 tasks in gang unschedulable: pod group is not ready. Origin reason is: {never}"
    found = explain.blockers(facts(explain.Verdict("DeviceClaimUnsatisfiable", message), gang=gang()))
    devices = [b for b in found if b.kind == "devices"]
    assert [b.says for b in devices] == [never]
    assert "waiting will not help" in devices[0].fix


def test_a_network_topology_blocker_is_named_in_the_schedulers_words_instead_of_nodes() -> None:
    says = (
        "network topology: no HyperNode of tier 1 or lower has room for the 8 pod(s) the job needs; "
        "the best, s1 (tier 1), has room for 5"
    )
    verdict = explain.Verdict(
        "NetworkTopologyUnsatisfied",
        f"8/8 tasks in gang unschedulable: pod group is not ready, 8 Pending. Origin reason is: {says}",
        fit_errors="0/16 nodes are unavailable: 8 Insufficient cpu.",
        detail=says,
    )
    found = explain.blockers(facts(verdict, gang=gang(), queue=queue(), nodes_total=16, nodes_could_hold=16))
    assert [b.kind for b in found] == ["topology"]
    assert found[0].says == says
    assert "highestTierAllowed" in found[0].fix


def test_a_predicted_start_is_said_and_given_to_scripts() -> None:
    facts = explain.Facts(
        job="Job default/big",
        job_phase="Pending",
        condition=explain.Verdict("Reserved", "4/4 tasks in gang unschedulable: ...; expected to start at x"),
        predicted_start="2026-11-27T18:30:05Z",
    )
    assert "Expected to start at 2026-11-27T18:30:05Z (reservation backfill's plan)." in explain.render(facts)
    assert explain.as_document(facts)["predicted_start"] == "2026-11-27T18:30:05Z"
