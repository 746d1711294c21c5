"""Network-topology-aware scheduling through the real stack, as Volcano's user guide shows it.

The cluster of the guide's section 3.3: eight nodes of 4 CPU, HyperNodes s0 (node0-3) and s1
(node4-7) of tier 1 under s2 of tier 2, and the guide's scheduler configuration (the
network-topology-aware plugin with its bin-packing arguments). The guide's three Jobs are applied
unchanged with kubectl from tests/e2e/manifests/network-topology; then what the guide does not
show: a hard constraint no HyperNode can meet (and what `phalanx job why` says of it), a soft one
that falls back to the whole cluster, a pod lost and replaced inside its gang's domain (and,
when the domain has no room, the job's PodPending policy restarting it in another), a
HyperNode refused by admission with Volcano's message, each HyperNode's nodeCount, HyperNodes
discovered from node labels and following a relabelled node, and what `phalanx up --topology`
sets up. Each test resets the package's stack to the cluster it needs, and at the end the stack's
default nodes are put back for the files after this one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phalanx import stack as stacks
from phalanx import topology as topologies
from phalanx.scenario import ExternalStack
from phalanx.scenario.kube import Kube
from phalanx.scenario.model import ClusterSpec
from tests.e2e.conftest import kubectl
from tests.e2e.test_vcctl import why
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

MANIFESTS = Path(__file__).parent / "manifests" / "network-topology"
LEAVES = {"s0": {f"node{i}" for i in range(4)}, "s1": {f"node{i}" for i in range(4, 8)}}
GUIDE_CLUSTER = {"nodes": [{"namePrefix": "node", "count": 8, "cpu": "4", "memory": "16Gi"}]}
DEFAULT_CLUSTER = {"nodes": [{"namePrefix": "node-", "count": 4, "cpu": "8", "memory": "32Gi"}]}
JOB = "network-topology-job"
WITHIN = 60.0  # seconds: the whole stack on a loaded machine


@pytest.fixture(scope="module")
def restore_default_cluster(stack: stacks.Stack) -> Iterator[None]:
    yield
    ExternalStack(Path(stack.state_dir)).reset(ClusterSpec.model_validate(DEFAULT_CLUSTER), None)


@pytest.fixture
def kube(stack: stacks.Stack, restore_default_cluster: None) -> Iterator[Kube]:
    conf = (MANIFESTS / "volcano-scheduler.conf").read_text()
    ExternalStack(Path(stack.state_dir)).reset(ClusterSpec.model_validate(GUIDE_CLUSTER), conf)
    apply(stack, MANIFESTS / "hypernodes.yaml")
    client = Kube(Path(stack.kubeconfig), stack.simulator_url)
    yield client
    client.close()


def apply(stack: stacks.Stack, manifest: Path | str) -> None:
    if isinstance(manifest, Path):
        applied = kubectl(stack, "apply", "-f", str(manifest))
    else:
        applied = kubectl(stack, "apply", "-f", "-", stdin=manifest)
    assert applied.returncode == 0, applied.stderr


def pods(stack: stacks.Stack, job: str) -> dict[str, dict[str, Any]]:
    got = kubectl(stack, "get", "pods", "-l", f"volcano.sh/job-name={job}", "-o", "json")
    assert got.returncode == 0, got.stderr
    return {p["metadata"]["name"]: p for p in json.loads(got.stdout)["items"]}


def running_nodes(stack: stacks.Stack, job: str) -> dict[str, str]:
    """pod name -> node, for the job's Running pods."""
    return {
        name: pod["spec"]["nodeName"]
        for name, pod in pods(stack, job).items()
        if (pod.get("status") or {}).get("phase") == "Running"
    }


def leaf_of(nodes: set[str]) -> str | None:
    return next((leaf for leaf, members in LEAVES.items() if nodes <= members), None)


def podgroup(kube: Kube, job: str) -> dict[str, Any]:
    (group,) = [g for g in kube.list_objects("PodGroup", "default") if g["metadata"]["name"].startswith(job)]
    return group


def job_manifest(name: str, replicas: int, topology: str, *, policies: str = "") -> str:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, namespace: default}}
spec:
  schedulerName: volcano
  minAvailable: {replicas}
  networkTopology: {topology}
  {policies}
  tasks:
    - name: t0
      replicas: {replicas}
      template:
        spec:
          containers:
            - name: c0
              image: nginx:latest
              resources: {{requests: {{cpu: "4"}}, limits: {{cpu: "4"}}}}
"""


def test_guide_hard_tier1_job_runs_four_pods_inside_one_leaf(stack: stacks.Stack, kube: Kube) -> None:
    apply(stack, MANIFESTS / "job-hard-tier1.yaml")
    placed = eventually(
        lambda: len(running_nodes(stack, JOB)) == 4 and running_nodes(stack, JOB), within=WITHIN
    )
    leaf = leaf_of(set(placed.values()))
    assert leaf is not None, placed  # all four inside one tier-1 HyperNode
    # The other four stay Pending: the gang may not leave its leaf, as the guide shows.
    waiting = [n for n, p in pods(stack, JOB).items() if not p["spec"].get("nodeName")]
    assert len(waiting) == 4
    annotations = eventually(lambda: podgroup(kube, JOB)["metadata"].get("annotations"), within=WITHIN)
    assert annotations.get("volcano.sh/job-allocated-hypernode") == leaf


def test_guide_partitions_each_land_in_a_leaf_of_their_own(stack: stacks.Stack, kube: Kube) -> None:
    apply(stack, MANIFESTS / "job-partitions.yaml")
    placed = eventually(
        lambda: len(running_nodes(stack, JOB)) == 8 and running_nodes(stack, JOB), within=WITHIN
    )
    first = leaf_of({placed[f"{JOB}-t0-{i}"] for i in range(4)})
    second = leaf_of({placed[f"{JOB}-t0-{i}"] for i in range(4, 8)})
    assert {first, second} == {"s0", "s1"}, placed


def test_guide_plain_pods_are_packed_into_one_leaf(stack: stacks.Stack, kube: Kube) -> None:
    apply(stack, MANIFESTS / "job-no-constraint.yaml")
    placed = eventually(
        lambda: len(running_nodes(stack, JOB)) == 2 and running_nodes(stack, JOB), within=WITHIN
    )
    assert leaf_of(set(placed.values())) is not None, placed  # HyperNode-level bin packing


def test_a_hard_job_no_leaf_can_hold_waits_and_why_names_the_topology(
    stack: stacks.Stack, kube: Kube
) -> None:
    apply(stack, job_manifest("five", 5, "{mode: hard, highestTierAllowed: 1}"))
    says = (
        "no HyperNode of tier 1 or lower has room for the 5 pod(s) the job needs; "
        "the best, s0 (tier 1), has room for 4"
    )

    def answer() -> str:
        text = why(stack, "five")
        return text if says in text else ""

    text = eventually(answer, "`job why five` names the topology", within=WITHIN)
    assert "[topology] network topology:" in text
    assert running_nodes(stack, "five") == {}
    conditions = (podgroup(kube, "five").get("status") or {}).get("conditions") or []
    assert any(says in str(c.get("message")) for c in conditions), conditions


def test_a_soft_job_no_leaf_can_hold_runs_across_leaves(stack: stacks.Stack, kube: Kube) -> None:
    apply(stack, job_manifest("six", 6, "{mode: soft}"))
    placed = eventually(
        lambda: len(running_nodes(stack, "six")) == 6 and running_nodes(stack, "six"), within=WITHIN
    )
    assert leaf_of(set(placed.values())) is None  # spread over both leaves: soft lets it run


def test_a_lost_pod_is_replaced_inside_the_gangs_domain(stack: stacks.Stack, kube: Kube) -> None:
    policies = "policies: [{event: PodFailed, action: RestartPod}]"
    apply(stack, job_manifest("repair", 3, "{mode: hard, highestTierAllowed: 2}", policies=policies))
    placed = eventually(
        lambda: len(running_nodes(stack, "repair")) == 3 and running_nodes(stack, "repair"), within=WITHIN
    )
    leaf = leaf_of(set(placed.values()))
    assert leaf is not None, placed  # the smallest domain that holds it
    before = {name: pod["metadata"]["uid"] for name, pod in pods(stack, "repair").items()}
    kube.control("/simulator/v1/namespaces/default/pods/repair-t0-0/fail", {"exitCode": 1})

    def replaced() -> dict[str, Any]:
        now = pods(stack, "repair")
        pod = now.get("repair-t0-0")
        fresh = pod is not None and pod["metadata"]["uid"] != before["repair-t0-0"]
        return now if fresh and (pod.get("status") or {}).get("phase") == "Running" else {}

    now = eventually(replaced, "repair-t0-0 replaced and running", within=WITHIN)
    assert now["repair-t0-0"]["spec"]["nodeName"] in LEAVES[leaf]
    # the rest of the gang kept running: the same pods
    assert {n: now[n]["metadata"]["uid"] for n in ("repair-t0-1", "repair-t0-2")} == {
        n: before[n] for n in ("repair-t0-1", "repair-t0-2")
    }


def test_when_the_domain_has_no_room_for_a_replacement_the_policys_next_step_restarts_the_job(
    stack: stacks.Stack, kube: Kube
) -> None:
    # A lost pod is replaced inside its gang's leaf; when that leaf has no room left (its node is
    # down and a filler took the last free one) the replacement waits, and the job's PodPending
    # policy restarts the whole job, which is then placed whole in the other leaf.
    policies = (
        "policies: [{event: PodFailed, action: RestartPod}, "
        "{event: PodPending, action: RestartJob, timeout: 10s}]"
    )
    apply(stack, job_manifest("moved", 3, "{mode: hard, highestTierAllowed: 1}", policies=policies))
    placed = eventually(
        lambda: len(running_nodes(stack, "moved")) == 3 and running_nodes(stack, "moved"), within=WITHIN
    )
    leaf = leaf_of(set(placed.values()))
    assert leaf is not None, placed
    apply(stack, job_manifest("filler", 1, "null"))
    filler = eventually(lambda: running_nodes(stack, "filler"), within=WITHIN)
    assert set(filler.values()) <= LEAVES[leaf]  # packed into the fuller leaf: it is now full
    lost = placed["moved-t0-0"]
    kube.control(f"/simulator/v1/nodes/{lost}/notready", {})
    kube.control("/simulator/v1/namespaces/default/pods/moved-t0-0/fail", {"exitCode": 1})

    (other,) = set(LEAVES) - {leaf}

    def moved() -> dict[str, str]:
        now = running_nodes(stack, "moved")
        return now if len(now) == 3 and set(now.values()) <= LEAVES[other] else {}

    eventually(moved, f"the job restarted whole in {other}", within=2 * WITHIN)
    annotations = eventually(
        lambda: (
            (podgroup(kube, "moved")["metadata"].get("annotations") or {}).get(
                "volcano.sh/job-allocated-hypernode"
            )
            == other
        ),
        f"the PodGroup records {other}",
        within=WITHIN,
    )
    assert annotations


def test_a_hypernode_breaking_volcanos_rules_is_refused_with_its_message(
    stack: stacks.Stack, kube: Kube
) -> None:
    refused = kubectl(
        stack,
        "apply",
        "-f",
        "-",
        stdin="""
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: bad}
spec:
  tier: 1
  members:
    - type: Node
      selector: {exactMatch: {name: node0}, regexMatch: {pattern: "^node"}}
""",
    )
    assert refused.returncode != 0
    assert "cannot specify more than one selector type (exactMatch, regexMatch, labelMatch)" in refused.stderr
    listed = kubectl(stack, "get", "hn", "-o", "name")
    assert sorted(listed.stdout.split()) == [
        "hypernode.topology.volcano.sh/s0",
        "hypernode.topology.volcano.sh/s1",
        "hypernode.topology.volcano.sh/s2",
    ]


def node_counts(stack: stacks.Stack, *selector: str) -> dict[str, int]:
    got = kubectl(stack, "get", "hypernodes", *selector, "-o", "json")
    assert got.returncode == 0, got.stderr
    return {
        h["metadata"]["name"]: int((h.get("status") or {}).get("nodeCount", -1))
        for h in json.loads(got.stdout)["items"]
    }


def test_hand_written_hypernodes_get_their_node_counts(stack: stacks.Stack, kube: Kube) -> None:
    want = {"s0": 4, "s1": 4, "s2": 8}
    eventually(lambda: node_counts(stack) == want, f"nodeCount {want}", within=WITHIN)
    # kubectl prints Volcano's columns for them
    printed = kubectl(stack, "get", "hn", "s2").stdout.split()
    assert printed[:9] == ["NAME", "TIER", "TIERNAME", "NODECOUNT", "AGE", "s2", "2", "spine", "8"]


def test_hypernodes_are_discovered_from_node_labels_and_follow_them(
    stack: stacks.Stack, restore_default_cluster: None
) -> None:
    def rack(prefix: str, value: str) -> dict[str, Any]:
        labels = {"example.com/rack": value, "example.com/spine": "sp0"}
        return {"namePrefix": prefix, "count": 2, "cpu": "4", "memory": "16Gi", "labels": labels}

    cluster = {"nodes": [rack("rack0-node", "r0"), rack("rack1-node", "r1")]}
    conf = (MANIFESTS / "volcano-scheduler.conf").read_text()
    ExternalStack(Path(stack.state_dir)).reset(ClusterSpec.model_validate(cluster), conf)
    discovered = ("-l", "volcano.sh/network-topology-source=label")
    try:
        apply(stack, MANIFESTS / "discovery.yaml")
        want = {
            "hypernode-fabric-tier1-r0": 2,
            "hypernode-fabric-tier1-r1": 2,
            "hypernode-fabric-tier2-sp0": 4,
        }
        eventually(lambda: node_counts(stack, *discovered) == want, f"discovered {want}", within=WITHIN)

        # A node moves to the other rack: the racks' members follow its label.
        labelled = kubectl(stack, "label", "node", "rack1-node1", "example.com/rack=r0", "--overwrite")
        assert labelled.returncode == 0, labelled.stderr
        want = {
            "hypernode-fabric-tier1-r0": 3,
            "hypernode-fabric-tier1-r1": 1,
            "hypernode-fabric-tier2-sp0": 4,
        }
        eventually(lambda: node_counts(stack, *discovered) == want, f"discovered {want}", within=WITHIN)

        # and a job held to tier 1 runs on the three nodes of rack r0 now
        apply(stack, job_manifest("racked", 3, "{mode: hard, highestTierAllowed: 1}"))
        placed = eventually(
            lambda: len(running_nodes(stack, "racked")) == 3 and running_nodes(stack, "racked"), within=WITHIN
        )
        assert set(placed.values()) == {"rack0-node0", "rack0-node1", "rack1-node1"}
    finally:
        kubectl(stack, "delete", "configmap", "-n", "volcano-system", "volcano-controller-configmap")


def test_phalanx_up_topology_labels_nodes_and_discovery_makes_racks_and_spines(
    stack: stacks.Stack, restore_default_cluster: None
) -> None:
    # The two halves of `phalanx up --topology nodes=8,racks=4,spines=2` on the package's stack:
    # the labelled nodes it hands the simulator, then discovery switched on for those labels.
    spec = topologies.parse_topology("nodes=8,racks=4,spines=2")
    nodes = topologies.labelled_nodes(spec, None)
    ExternalStack(Path(stack.state_dir)).reset(ClusterSpec.model_validate({"nodes": nodes}), None)
    try:
        topologies.enable_discovery(spec, Path(stack.kubeconfig), stack.simulator_url)
        racks = {f"hypernode-phalanx-tier1-rack-{i}": 2 for i in range(4)}
        spines = {f"hypernode-phalanx-tier2-spine-{i}": 4 for i in range(2)}
        want = racks | spines
        eventually(lambda: node_counts(stack) == want, f"racks and spines {want}", within=WITHIN)
    finally:
        kubectl(stack, "delete", "configmap", "-n", "volcano-system", "volcano-controller-configmap")
