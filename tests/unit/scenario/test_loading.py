"""Reading scenario files: every seed and FORMAT.md's examples parse; typos are refused by name."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from phalanx.scenario import ScenarioError, load_scenario, parse_scenario
from phalanx.scenario.expectations import DEFAULT_WITHIN, parse_duration

pytestmark = pytest.mark.unit

SEEDS = sorted((Path(__file__).parent / "seeds").glob("*.yaml"))

# FORMAT.md's first example, with `expect: {...}` filled in (the format elides it).
FORMAT_SCENARIO = """
name: queue-capability-holds-second-gang
description: free text
cluster:
  namespaces: [default, team-a]
  nodes:
    - name: node-1
      cpu: "4"
      memory: 8Gi
      gpu: 0
      pods: 110
      extended: {example.com/fpga: 2}
      labels: {zone: a}
      taints: [{key: dedicated, value: ml, effect: NoSchedule}]
  queues:
    - name: q1
      weight: 1
      capability: {cpu: "4", memory: 6Gi}
      guarantee: {cpu: "1"}
      reclaimable: true
      priority: 0
      parent: root
      state: Open
      deserved: {cpu: "2"}
  priorityClasses:
    - {name: high-priority, value: 1000}
scheduler:
  conf: |
    actions: "enqueue, allocate, backfill"
    tiers:
    - plugins:
      - name: priority
      - name: gang
steps:
  - apply: |
      apiVersion: batch.volcano.sh/v1alpha1
      kind: Job
      metadata: {name: j1, namespace: default}
      spec: ...
  - delete: {kind: Job, namespace: default, name: j1}
  - pod: {namespace: default, name: j1-worker-0, action: succeed}
  - pod: {namespace: default, name: j1-worker-1, action: fail, exitCode: 3}
  - pods: {namespace: default, job: j1, task: worker, action: succeed}
  - node: {name: node-2, action: add, cpu: "4", memory: 8Gi, labels: {zone: b}}
  - node: {name: node-1, action: taint, taint: {key: k, value: v, effect: NoSchedule}}
  - patch: {kind: Job, namespace: default, name: j1, merge: {spec: {minAvailable: 2}}}
  - command: {namespace: default, job: j1, action: AbortJob}
  - queue: {name: q1, action: close}
  - sleep: 2s
  - expect: {}
"""

# FORMAT.md's expectation example, every matcher in one step.
FORMAT_EXPECT = """
  - expect:
      within: 30s
      jobs:
        - {namespace: default, name: j1, phase: Running, running: 3, pending: 0,
           succeeded: 0, failed: 0, retryCount: 0}
      podgroups:
        - {namespace: default, job: j2, phase: Pending,
           condition: {type: Unschedulable, status: "True", reason: NotEnoughResources},
           message: {contains: "tasks in gang unschedulable"}}
        - {namespace: default, job: j1, fields: {spec.minMember: 3, spec.queue: q1}}
        - {namespace: default, pod: p1, phase: [Inqueue, Running]}
      pods:
        - {namespace: default, selector: "volcano.sh/job-name=j1", count: 3, phase: Running}
        - {namespace: default, name: j1-ps-0, node: node-1, env: {VK_TASK_INDEX: "0"},
           files: {/etc/volcano/worker.host: "j1-worker-0.j1\\nj1-worker-1.j1"}}
      queues:
        - {name: q1, state: Closed}
      startedBefore:
        - [default/j3, default/j2]
      evicted:
        - {namespace: default, job: j1, count: 1}
      recreated:
        - {namespace: default, name: j1-worker-0}
      notRecreated:
        - {namespace: default, name: j1-ps-0}
      sameNode: [[default/j1-a-0, default/j1-b-0]]
      distinctNodes: [[default/j1-a-0, default/j1-a-1]]
      objects:
        - {kind: ConfigMap, namespace: default, name: j1-svc,
           fields: {"data[worker.host]": "j1-worker-0.j1\\nj1-worker-1.j1"}}
        - {kind: Service, namespace: default, name: j1, fields: {spec.clusterIP: None}}
        - {kind: NetworkPolicy, namespace: default, name: j1, exists: true}
        - {kind: Pod, namespace: default, selector: "volcano.sh/job-name=j1", count: 2,
           fields: {spec.nodeName: node-1}}
      denied:
        containsAny: ["duplicated task name"]
"""

MINIMAL = "name: s\ncluster: {nodes: [{name: n1, cpu: '4', memory: 8Gi}]}\nsteps:\n"


def with_steps(steps: str) -> str:
    return MINIMAL + textwrap.indent(textwrap.dedent(steps).strip("\n"), "  ") + "\n"


@pytest.mark.parametrize("path", SEEDS, ids=[p.stem for p in SEEDS])
def test_every_seed_parses(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.name
    assert any(step.expect is not None for step in scenario.steps)


def test_five_seeds_are_present() -> None:
    assert len(SEEDS) == 5


def test_format_example_parses_with_every_step_kind() -> None:
    scenario = parse_scenario(FORMAT_SCENARIO)
    kinds = [step.kind for step in scenario.steps]
    assert kinds == [
        "apply",
        "delete",
        "pod",
        "pod",
        "pods",
        "node",
        "node",
        "patch",
        "command",
        "queue",
        "sleep",
        "expect",
    ]
    assert scenario.cluster.all_namespaces() == ["default", "team-a"]
    assert scenario.steps[3].pod is not None
    assert scenario.steps[3].pod.exit_code == 3
    assert scenario.steps[10].sleep == 2.0


def test_format_expectation_example_parses_every_matcher() -> None:
    scenario = parse_scenario(MINIMAL + FORMAT_EXPECT)
    expect = scenario.steps[0].expect
    assert expect is not None
    assert expect.seconds == 30.0
    assert expect.podgroups[2].phase == ["Inqueue", "Running"]
    assert expect.started_before == [("default/j3", "default/j2")]
    assert expect.objects[1].fields == {"spec.clusterIP": "None"}
    assert expect.pods[1].files == {"/etc/volcano/worker.host": "j1-worker-0.j1\nj1-worker-1.j1"}
    assert expect.denied is not None
    assert expect.denied.contains_any == ["duplicated task name"]


def test_node_name_prefix_expands() -> None:
    scenario = parse_scenario(
        "name: s\ncluster: {nodes: [{namePrefix: node-, count: 3}]}\nsteps: [{sleep: 1s}]"
    )
    assert scenario.cluster.nodes[0].names() == ["node-0", "node-1", "node-2"]


@pytest.mark.parametrize(
    ("steps", "problem"),
    [
        (
            "- expect: {jobs: [{name: j1, phse: Running}]}",
            "steps[0].expect.jobs[0]: unknown key 'phse'",
        ),
        (
            "- sleep: 1s\n- sleep: 1s\n- expect: {jobs: [{name: j1, phase: Running}], withn: 3s}",
            "steps[2].expect: unknown key 'withn'",
        ),
        ("- apply: 'x'\n  sleep: 1s", "steps[0]: a step has exactly one of"),
        ("- frobnicate: {}", "steps[0]: unknown key 'frobnicate'"),
        ("- pod: {name: p, action: explode}", "steps[0].pod.action: Input should be"),
        (
            "- pod: {name: p, action: fail, exitCode: 0}",
            "steps[0].pod: a failing pod needs a non-zero exitCode",
        ),
        (
            "- pods: {task: worker, action: succeed}",
            "steps[0].pods: give either job (optionally with task) or selector",
        ),
        (
            "- node: {name: n2, action: cordon, cpu: '2'}",
            "steps[0].node: cpu only go with action add",
        ),
        ("- node: {name: n2, action: taint}", "steps[0].node: taint goes with"),
        ("- expect: {within: 3s, stays: 3s}", "steps[0].expect: give within or stays, not both"),
        ("- expect: {within: soon}", "steps[0].expect.within: a duration such as"),
        (
            "- expect: {pods: [{selector: a=b}]}",
            "steps[0].expect.pods[0]: a selector needs a count",
        ),
        (
            "- expect: {podgroups: [{name: a, job: b}]}",
            "steps[0].expect.podgroups[0]: name the PodGroup by exactly one of",
        ),
        (
            "- expect: {objects: [{kind: Pod, name: p, fields: {a: {contains: 3}}}]}",
            "steps[0].expect.objects[0].fields.a: contains takes a string",
        ),
        (
            "- expect: {objects: [{kind: Pod, name: p, fields: {'a[b': 1}}]}",
            "unclosed or empty bracket",
        ),
        ("- expect: {denied: {containsAny: []}}", "steps[0].expect.denied.containsAny"),
        (
            "- expect: {jobs: [{name: j1, condition: {type: X}}]}",
            "steps[0].expect.jobs[0]: unknown key 'condition'",
        ),
    ],
    ids=[
        "typo-in-job",
        "typo-in-expect",
        "two-kinds",
        "unknown-step",
        "bad-action",
        "fail-exit-0",
        "pods-without-job",
        "shape-without-add",
        "taint-without-taint",
        "within-and-stays",
        "bad-duration",
        "selector-without-count",
        "podgroup-two-names",
        "bad-matcher",
        "bad-path",
        "empty-denied",
        "job-has-no-condition",
    ],
)
def test_mistakes_are_refused_with_their_place(steps: str, problem: str) -> None:
    with pytest.raises(ScenarioError) as raised:
        parse_scenario(with_steps(steps), "s.yaml")
    assert any(p.startswith(problem) or problem in p for p in raised.value.problems), raised.value.problems


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("name: s\nsteps: [{sleep: 1}]", "(top level): missing key 'cluster'"),
        ("name: s\ncluster: {nodes: []}\nsteps: [{sleep: 1}]", "cluster.nodes: List should have"),
        (
            "name: s\ncluster: {nodes: [{name: a}, {name: a}]}\nsteps: [{sleep: 1}]",
            "cluster: duplicate node names: a",
        ),
        (
            "name: s\ncluster: {nodes: [{name: a, cpu: lots}]}\nsteps: [{sleep: 1}]",
            "cluster.nodes[0].cpu: quantities must match",
        ),
        (
            "name: s\ncluster: {nodes: [{namePrefix: n-}]}\nsteps: [{sleep: 1}]",
            "cluster.nodes[0]: a node needs a name, or namePrefix and count",
        ),
        (
            "name: s\ncluster: {nodes: [{name: a}], queues: [{name: q, state: Shut}]}\nsteps: [{sleep: 1}]",
            "cluster.queues[0].state: Input should be",
        ),
        ("- just a list", "a scenario is a YAML mapping"),
        ("name: [unclosed", "not valid YAML"),
    ],
    ids=[
        "no-cluster",
        "no-nodes",
        "duplicate-node",
        "bad-quantity",
        "prefix-without-count",
        "bad-queue-state",
        "not-a-mapping",
        "bad-yaml",
    ],
)
def test_file_level_mistakes(text: str, problem: str) -> None:
    with pytest.raises(ScenarioError) as raised:
        parse_scenario(text)
    assert any(problem in p for p in raised.value.problems), raised.value.problems


def test_error_message_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text(with_steps("- expect: {jobs: [{name: j1, phse: Running}]}"))
    with pytest.raises(ScenarioError, match=r"typo\.yaml: steps\[0\]\.expect\.jobs\[0\]: unknown"):
        load_scenario(path)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30.0), ("500ms", 0.5), ("1m30s", 90.0), ("2", 2.0), (3, 3.0), ("1.5s", 1.5)],
    ids=["seconds", "millis", "minutes-and-seconds", "bare-string", "number", "fraction"],
)
def test_durations(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "3 s", "-1s", "5x", True], ids=str)
def test_bad_durations(text: object) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_expect_defaults_to_thirty_seconds_within() -> None:
    scenario = parse_scenario(with_steps("- expect: {queues: [{name: q1}]}"))
    expect = scenario.steps[0].expect
    assert expect is not None
    assert (expect.seconds, expect.holds_throughout) == (DEFAULT_WITHIN, False)
