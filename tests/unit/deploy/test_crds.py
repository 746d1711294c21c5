"""The phalanx-crds chart defines Volcano's five custom resources as Volcano serves them.

Names, short names, scope, versions, status subresources and printer columns are Volcano's (so
`kubectl get vcjob` and `kubectl get pg` read the same); the schemas are structural, which the API
server requires, and accept Volcano manifests while rejecting what Volcano's own CRDs reject.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import yaml

from tests.unit.deploy.rendering import Manifest, render

pytestmark = pytest.mark.unit

# name: (group, version, kind, scope, shortNames, status subresource, printer column names)
VOLCANO = {
    "jobs.batch.volcano.sh": (
        "batch.volcano.sh", "v1alpha1", "Job", "Namespaced", ["vcjob", "vj"], True,
        ["STATUS", "minAvailable", "RUNNINGS", "AGE", "QUEUE"],
    ),
    "podgroups.scheduling.volcano.sh": (
        "scheduling.volcano.sh", "v1beta1", "PodGroup", "Namespaced", ["pg", "podgroup-v1beta1"],
        False, ["STATUS", "minMember", "RUNNINGS", "AGE", "QUEUE"],
    ),
    "queues.scheduling.volcano.sh": (
        "scheduling.volcano.sh", "v1beta1", "Queue", "Cluster", ["q", "queue-v1beta1"], True,
        ["PARENT"],
    ),
    "commands.bus.volcano.sh": (
        "bus.volcano.sh", "v1alpha1", "Command", "Namespaced", [], False,
        ["ACTION", "TARGET", "AGE"],
    ),
    "hypernodes.topology.volcano.sh": (
        "topology.volcano.sh", "v1alpha1", "HyperNode", "Cluster", ["hn"], True,
        ["Tier", "TierName", "NodeCount", "Age"],
    ),
}  # fmt: skip


def crds(values: dict[str, Any] | None = None) -> dict[str, Manifest]:
    return {crd["metadata"]["name"]: crd for crd in render("phalanx-crds", values)}


def schema_of(name: str) -> dict[str, Any]:
    return crds()[name]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


def test_the_chart_holds_exactly_volcanos_five_crds() -> None:
    objects = render("phalanx-crds")
    assert {obj["kind"] for obj in objects} == {"CustomResourceDefinition"}
    assert sorted(crds()) == sorted(VOLCANO)


@pytest.mark.parametrize("name", sorted(VOLCANO))
def test_crd_is_served_as_volcano_serves_it(name: str) -> None:
    group, version, kind, scope, short_names, has_status, columns = VOLCANO[name]
    spec = crds()[name]["spec"]
    assert (spec["group"], spec["scope"], spec["names"]["kind"]) == (group, scope, kind)
    assert spec["names"]["plural"] == name.split(".")[0]
    assert spec["names"].get("shortNames", []) == short_names
    [served] = spec["versions"]
    assert (served["name"], served["served"], served["storage"]) == (version, True, True)
    assert ("status" in served.get("subresources", {})) is has_status
    assert [c["name"] for c in served.get("additionalPrinterColumns", [])] == columns


@pytest.mark.parametrize("name", sorted(VOLCANO))
def test_crds_survive_uninstall_unless_told_otherwise(name: str) -> None:
    assert crds()[name]["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    assert "annotations" not in crds({"keep": False})[name]["metadata"]


def _structural_violations(node: dict[str, Any], path: str) -> list[str]:
    """Where a schema node lacks a type (the API server rejects non-structural CRD schemas)."""
    problems = []
    if "type" not in node and not node.get("x-kubernetes-int-or-string"):
        problems.append(path)
    for key, child in node.get("properties", {}).items():
        problems += _structural_violations(child, f"{path}.{key}")
    if isinstance(node.get("items"), dict):
        problems += _structural_violations(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        problems += _structural_violations(node["additionalProperties"], f"{path}{{}}")
    return problems


@pytest.mark.parametrize("name", sorted(VOLCANO))
def test_schemas_are_structural(name: str) -> None:
    schema = schema_of(name)
    assert schema["type"] == "object"
    assert _structural_violations(schema, name) == []


JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: tf, namespace: team-a}
spec:
  minAvailable: 3
  schedulerName: volcano
  queue: research
  maxRetry: 2
  policies: [{event: PodEvicted, action: RestartJob}]
  plugins: {svc: [], env: [], ssh: []}
  tasks:
    - name: ps
      replicas: 1
      template: {spec: {containers: [{name: ps, image: tf, resources: {requests: {cpu: "1"}}}]}}
    - name: worker
      replicas: 2
      minAvailable: 2
      policies: [{exitCode: 3, action: RestartTask}]
      template: {spec: {restartPolicy: Never, containers: [{name: w, image: tf}]}}
status:
  state: {phase: Running}
  minAvailable: 3
  running: 3
"""
PODGROUP = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: ray-pg, namespace: team-a}
spec: {minMember: 3, minResources: {cpu: "3", memory: 4Gi, nvidia.com/gpu: 1}, queue: research}
status: {phase: Inqueue, running: 0}
"""
QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec: {weight: 4, reclaimable: true, capability: {cpu: "16", memory: 64Gi}, parent: root}
status: {state: Open}
"""
COMMAND = """
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {name: tf-abort, namespace: team-a}
action: AbortJob
target:
  apiVersion: batch.volcano.sh/v1alpha1
  kind: Job
  name: tf
  uid: 7f4c1e9a-0b2d-4c55-9d0e-3a1f2b6c8d90
"""
MANIFESTS = {
    "jobs.batch.volcano.sh": JOB,
    "podgroups.scheduling.volcano.sh": PODGROUP,
    "queues.scheduling.volcano.sh": QUEUE,
    "commands.bus.volcano.sh": COMMAND,
}


def _errors(name: str, manifest: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema_of(name))
    return [error.message for error in validator.iter_errors(manifest)]


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_volcano_manifests_fit_the_schema(name: str) -> None:
    assert _errors(name, yaml.safe_load(MANIFESTS[name])) == []


def _edited(text: str, path: str, value: Any) -> dict[str, Any]:
    manifest: dict[str, Any] = yaml.safe_load(text)
    *parents, last = path.split(".")
    node: Any = manifest
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    node[last] = value
    return manifest


@pytest.mark.parametrize(
    ("name", "path", "value"),
    [
        ("queues.scheduling.volcano.sh", "spec.weight", 0),
        ("queues.scheduling.volcano.sh", "spec.weight", 65536),
        ("queues.scheduling.volcano.sh", "spec.reclaimable", "yes"),
        ("queues.scheduling.volcano.sh", "spec.capability", "lots"),
        ("jobs.batch.volcano.sh", "spec.minAvailable", -1),
        ("jobs.batch.volcano.sh", "spec.maxRetry", "three"),
        ("jobs.batch.volcano.sh", "spec.tasks.1.replicas", -2),
        ("jobs.batch.volcano.sh", "spec.tasks", {"name": "not-a-list"}),
        ("podgroups.scheduling.volcano.sh", "spec.minMember", "3"),
        ("podgroups.scheduling.volcano.sh", "spec.minResources", ["cpu"]),
        ("commands.bus.volcano.sh", "action", 7),
    ],
    ids=[
        "queue-weight-zero",
        "queue-weight-above-65535",
        "queue-reclaimable-not-bool",
        "queue-capability-not-map",
        "job-negative-min-available",
        "job-max-retry-not-int",
        "job-task-negative-replicas",
        "job-tasks-not-list",
        "podgroup-min-member-string",
        "podgroup-min-resources-list",
        "command-action-not-string",
    ],
)
def test_schema_rejects_what_volcano_rejects(name: str, path: str, value: Any) -> None:
    assert _errors(name, _edited(MANIFESTS[name], path, value)) != []


@pytest.mark.parametrize(
    ("name", "path", "default"),
    [
        ("queues.scheduling.volcano.sh", "weight", 1),
        ("jobs.batch.volcano.sh", "maxRetry", 3),
        ("jobs.batch.volcano.sh", "queue", "default"),
        ("podgroups.scheduling.volcano.sh", "queue", "default"),
    ],
    ids=["queue-weight", "job-max-retry", "job-queue", "podgroup-queue"],
)
def test_schema_defaults_are_volcanos(name: str, path: str, default: Any) -> None:
    assert schema_of(name)["properties"]["spec"]["properties"][path]["default"] == default
