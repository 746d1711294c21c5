"""The scenario runner against a real simulator: steps, simulator-level expectations, fresh state.

Only what the simulator does alone is expected here (default-scheduler pods, nodes, objects,
evictions, refusals); Volcano Jobs need the whole stack and belong to the end-to-end scenarios.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from phalanx.scenario import ExternalStack, run_files
from tests.simulator_thread import RunningSimulator, running_simulator

pytestmark = pytest.mark.integration

POD = """
      apiVersion: v1
      kind: Pod
      metadata: {{name: {name}, namespace: team-a, labels: {{app: web}}}}
      spec:
        schedulerName: default-scheduler
        containers:
          - name: main
            image: busybox
            env: [{{name: ROLE, value: {name}}}]
            resources: {{requests: {{cpu: "1", memory: 1Gi}}}}
            volumeMounts: [{{name: cfg, mountPath: /etc/cfg}}, {{name: sec, mountPath: /etc/sec}}]
        volumes:
          - {{name: cfg, configMap: {{name: cfg}}}}
          - {{name: sec, secret: {{secretName: sec}}}}
"""

EVERYTHING = f"""
name: simulator-level
cluster:
  namespaces: [team-a]
  nodes:
    - {{name: node-1, cpu: "2", memory: 4Gi, labels: {{zone: a}}}}
  queues:
    - {{name: q1, weight: 2, capability: {{cpu: "4"}}}}
  priorityClasses:
    - {{name: high, value: 1000}}
scheduler:
  conf: |
    actions: "enqueue, allocate"
steps:
  - apply: |
      apiVersion: v1
      kind: ConfigMap
      metadata: {{name: cfg, namespace: team-a}}
      data: {{hosts: "a-0.a\\na-1.a", replicas: "3"}}
      ---
      apiVersion: v1
      kind: Secret
      metadata: {{name: sec, namespace: team-a}}
      stringData: {{token: s3cret}}
      ---{POD.format(name="web-0")}      ---{POD.format(name="web-1")}
  - expect:
      within: 10s
      pods:
        - {{namespace: team-a, name: web-0, phase: Running, node: node-1,
           env: {{ROLE: web-0, OTHER: {{absent: true}}}},
           files: {{/etc/cfg/hosts: "a-0.a\\na-1.a", /etc/sec/token: s3cret}}}}
        - {{namespace: team-a, selector: app=web, count: 2, phase: [Running, Succeeded]}}
      sameNode: [[team-a/web-0, team-a/web-1]]
      queues:
        - {{name: q1, fields: {{spec.weight: 2, spec.capability.cpu: 4000m}}}}
      objects:
        - {{kind: ConfigMap, namespace: team-a, name: cfg, fields: {{"data[replicas]": 3}}}}
        - {{kind: Secret, namespace: team-a, name: sec, fields: {{data.token: s3cret}}}}
        - {{kind: Node, name: node-1, fields: {{"metadata.labels[zone]": a,
                                              status.allocatable.memory: 4Gi}}}}
        - {{kind: PriorityClass, name: high, fields: {{value: 1000}}}}
        - {{kind: ConfigMap, namespace: volcano-system, name: volcano-scheduler-configmap,
           fields: {{"data[volcano-scheduler.conf]": {{contains: "enqueue, allocate"}}}}}}
        - {{kind: ConfigMap, namespace: team-a, name: nope, exists: false}}
  - node: {{name: node-2, action: add, cpu: "4", memory: 8Gi}}
  - node: {{name: node-1, action: cordon}}
  - node: {{name: node-2, action: taint, taint: {{key: dedicated, value: ml, effect: NoSchedule}}}}
  - expect:
      objects:
        - {{kind: Node, name: node-1, fields: {{spec.unschedulable: true}}}}
        - {{kind: Node, name: node-2, fields: {{status.capacity.cpu: "4",
            spec.taints: {{includes: [{{key: dedicated, effect: NoSchedule}}]}}}}}}
  - node: {{name: node-2, action: untaint, taint: {{key: dedicated, effect: NoSchedule}}}}
  - node: {{name: node-1, action: uncordon}}
  - pod: {{namespace: team-a, name: web-0, action: succeed}}
  - pod: {{namespace: team-a, name: web-1, action: evict}}
  - expect:
      pods:
        - {{namespace: team-a, name: web-0, phase: Succeeded}}
        - {{namespace: team-a, name: web-1, exists: false}}
      evicted:
        - {{namespace: team-a, name: web-1, count: 1}}
        - {{namespace: team-a, selector: app=web, count: 1}}
      objects:
        - {{kind: Node, name: node-2, fields: {{spec.taints: {{absent: true}}}}}}
        - {{kind: Node, name: node-1, fields: {{spec.unschedulable: {{absent: true}}}}}}
  - apply: |{POD.format(name="web-1")}
  - expect:
      pods: [{{namespace: team-a, name: web-1, phase: Running}}]
      recreated: [{{namespace: team-a, name: web-1}}]
      notRecreated: [{{namespace: team-a, name: web-0}}]
  - delete: {{kind: ConfigMap, namespace: team-a, name: missing}}
  - expect:
      denied: {{containsAny: ["not found"]}}
  - expect:
      stays: 1s
      pods: [{{namespace: team-a, name: web-0, phase: Succeeded}}]
"""

# Runs after EVERYTHING: nothing of it may be left.
FRESH = """
name: fresh-state
cluster:
  nodes: [{name: only-node, cpu: "1", memory: 1Gi}]
steps:
  - expect:
      within: 5s
      objects:
        - {kind: Namespace, name: team-a, exists: false}
        - {kind: Node, name: node-1, exists: false}
        - {kind: Queue, name: q1, exists: false}
        - {kind: PriorityClass, name: high, exists: false}
        - {kind: Queue, name: default, fields: {spec.weight: 1}}
        - {kind: Pod, namespace: default, selector: app=web, count: 0}
        - {kind: ConfigMap, namespace: volcano-system, name: volcano-scheduler-configmap,
           exists: false}
        - {kind: Node, name: only-node, exists: true}
"""

FAILING = """
name: failing
cluster:
  nodes: [{name: n1, cpu: "1", memory: 1Gi}]
steps:
  - expect:
      within: 1s
      objects: [{kind: Node, name: n1, fields: {status.capacity.cpu: "2"}}]
  - delete: {kind: ConfigMap, namespace: default, name: missing}
  - expect:
      objects: [{kind: Node, name: n1}]
"""


@pytest.fixture(scope="module")
def simulator() -> Iterator[RunningSimulator]:
    with running_simulator() as sim:
        yield sim


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_every_simulator_level_expectation_passes_and_state_is_fresh(
    simulator: RunningSimulator, tmp_path: Path
) -> None:
    files = [write(tmp_path, "a.yaml", EVERYTHING), write(tmp_path, "b.yaml", FRESH)]
    lines: list[str] = []
    report = run_files(files, ExternalStack(kubeconfig=simulator.kubeconfig_path), emit=lines.append)
    assert report.failed == 0, "\n".join(lines)
    assert lines[-1] == f"{report.passed} passed, 0 failed"
    assert report.passed == 31


def test_failures_say_what_was_observed_and_a_refused_step_stops_the_scenario(
    simulator: RunningSimulator, tmp_path: Path
) -> None:
    lines: list[str] = []
    report = run_files(
        [write(tmp_path, "f.yaml", FAILING)],
        ExternalStack(kubeconfig=simulator.kubeconfig_path),
        emit=lines.append,
    )
    assert lines[1:] == [
        "  ✗ objects[0] Node n1 status.capacity.cpu=2: expected status.capacity.cpu 2, "
        "observed 1 (within 1s)",
        '  ✗ steps[1] delete: refused: delete ConfigMap missing: configmaps "missing" not found '
        "(the scenario stops here)",
        "0 passed, 2 failed",
    ]
    assert not report.ok


def test_cli_exit_code(simulator: RunningSimulator, tmp_path: Path) -> None:
    from phalanx.cli import app

    runner = CliRunner()
    kubeconfig = str(simulator.kubeconfig_path)
    passing = runner.invoke(
        app, ["scenario", "run", str(write(tmp_path, "b.yaml", FRESH)), "--kubeconfig", kubeconfig]
    )
    assert passing.exit_code == 0, passing.output
    assert passing.output.rstrip().endswith("8 passed, 0 failed")
    failing = runner.invoke(
        app,
        ["scenario", "run", str(write(tmp_path, "f.yaml", FAILING)), "--kubeconfig", kubeconfig],
    )
    assert failing.exit_code == 1, failing.output
