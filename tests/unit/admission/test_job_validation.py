"""Job validation on CREATE: every rule, with the message Volcano gives and the field it names.

Each case is an already defaulted job (as the validating webhook receives it) in a cluster with
the `default` and `root` queues, a closed queue, a parent queue and the `high-priority` class.
"""

from __future__ import annotations

from typing import Any

import pytest

from services.admission.rules import QueueAdmissionFacts, compose, default_job, validate_job_create

from .builders import context, job, task

pytestmark = pytest.mark.unit

CTX = context(
    QueueAdmissionFacts("closed", state="Closed"),
    QueueAdmissionFacts("team"),
    QueueAdmissionFacts("team-vision", parent="team"),
    priority_classes=frozenset({"high-priority"}),
)
LABEL_ERROR = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
LISTS = (
    " valid events are [* PodFailed PodEvicted PodPending Unknown TaskCompleted TaskFailed "
    "JobUpdated], valid actions are [AbortJob RestartJob RestartTask RestartPod "
    "RestartPartition TerminateJob CompleteJob ResumeJob];"
)


def one_error(message: str) -> str:
    return f"1 error occurred:\n\t* {message}\n\n{LISTS}"


def with_template(spec: dict[str, Any], **task_fields: Any) -> dict[str, Any]:
    return job(tasks=[task(**task_fields) | {"template": {"spec": spec}}])


def policy_job(*policies: dict[str, Any], on_task: bool = False) -> dict[str, Any]:
    if on_task:
        return job(tasks=[task(policies=list(policies))])
    return job(policies=list(policies))


NUMA = {"topologyPolicy": "single-numa-node"}
CPU_HALF = {"containers": [{"name": "m", "image": "i", "resources": {"requests": {"cpu": "500m"}}}]}
CPU_TWO = {"containers": [{"name": "m", "image": "i", "resources": {"limits": {"cpu": "2"}}}]}

# (id, job, expected message, expected cause fields)
CASES: list[tuple[str, dict[str, Any], str, list[str]]] = [
    ("valid", job(), "", []),
    ("no-tasks", job(tasks=[]), "No task specified in job spec", ["spec.tasks"]),
    (
        "negative-min-available",
        job(minAvailable=-1),
        "job 'minAvailable' must be >= 0.",
        ["spec.minAvailable"],
    ),
    ("negative-max-retry", job(maxRetry=-1), "'maxRetry' cannot be less than zero.", ["spec.maxRetry"]),
    (
        "negative-ttl",
        job(ttlSecondsAfterFinished=-5),
        "'ttlSecondsAfterFinished' cannot be less than zero.",
        ["spec.ttlSecondsAfterFinished"],
    ),
    ("zero-min-success", job(minSuccess=0), "job 'minSuccess' must be >= 1.", ["spec.minSuccess"]),
    (
        "mpi-master-missing",
        job(plugins={"mpi": ["--master=launcher"], "svc": [], "ssh": []}),
        "The specified mpi master task was not found",
        ["spec.plugins.mpi"],
    ),
    (
        "mpi-master-present",
        job(
            tasks=[task("launcher"), task("worker")],
            plugins={"mpi": ["--master", "launcher"], "svc": [], "ssh": []},
        ),
        "",
        [],
    ),
    (
        "network-topology-both-highest",
        job(networkTopology={"mode": "hard", "highestTierAllowed": 1, "highestTierName": "rack"}),
        "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously",
        ["spec.networkTopology"],
    ),
    (
        "task-min-available-above-replicas",
        job(tasks=[task(replicas=1, minAvailable=2)], minAvailable=1),
        "'minAvailable' is greater than 'replicas' in task: worker, job: job-1;",
        ["spec.tasks[0].minAvailable"],
    ),
    (
        "task-negative-min-available",
        job(tasks=[task(replicas=1, minAvailable=-1)], minAvailable=1),
        "'minAvailable' < 0 in task: worker, job: job-1;",
        ["spec.tasks[0].minAvailable"],
    ),
    (
        "task-negative-replicas",
        job(tasks=[task(replicas=-1, minAvailable=0), task("b", replicas=2)], minAvailable=1),
        "'replicas' < 0 in task: worker, job: job-1; "
        "'minAvailable' is greater than 'replicas' in task: worker, job: job-1;",
        ["spec.tasks[0].replicas", "spec.tasks[0].minAvailable"],
    ),
    ("task-name-not-a-label", job(tasks=[task("Worker")]), f"[{LABEL_ERROR}];", ["spec.tasks[0].name"]),
    (
        "duplicated-task-name-stops-at-first",
        job(tasks=[task("a"), task("a"), task("Bad")]),
        "duplicated task name a;",
        ["spec.tasks[1].name"],
    ),
    (
        "pod-name-too-long",
        job(name="j" * 60, tasks=[task("worker")]),
        f"create pod with name {'j' * 60}-worker-0 validate failed "
        "[name part must be no more than 63 characters];",
        ["spec.tasks[0].name"],
    ),
    (
        "job-name-not-qualified",
        job(name="bad_", tasks=[task("w")]),  # its pod name bad_-w-0 is fine
        "create job with name bad_ validate failed [name part must consist of alphanumeric "
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
        "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')]",
        ["metadata.name"],
    ),
    (
        "template-without-containers",
        with_template({"containers": []}),
        "spec.task[0].template.spec.containers: Required value.",
        ["spec.tasks[0].template.spec.containers"],
    ),
    (
        "container-without-image-and-bad-restart-policy",
        with_template({"restartPolicy": "Sometimes", "containers": [{"name": "main"}]}),
        "spec.task[0].template.spec.containers[0].image: Required value. "
        'template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: '
        '"Always", "OnFailure", "Never".',
        ["spec.tasks[0].template.spec.containers[0].image", "spec.tasks[0].template.spec.restartPolicy"],
    ),
    (
        "duplicate-container-names",
        with_template({"containers": [{"name": "m", "image": "i"}, {"name": "m", "image": "i"}]}),
        'spec.task[0].template.spec.containers[1].name: Duplicate value: "m".',
        ["spec.tasks[0].template.spec.containers[1].name"],
    ),
    (
        "request-above-limit",
        with_template(
            {
                "containers": [
                    {
                        "name": "m",
                        "image": "i",
                        "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
                    }
                ]
            }
        ),
        'spec.task[0].template.spec.containers[0].resources.requests: Invalid value: "2": '
        "must be less than or equal to cpu limit of 1.",
        ["spec.tasks[0].template.spec.containers[0].resources.requests"],
    ),
    (
        "bad-quantity",
        with_template(
            {"containers": [{"name": "m", "image": "i", "resources": {"requests": {"memory": "lots"}}}]}
        ),
        'spec.task[0].template.spec.containers[0].resources.requests[memory]: Invalid value: "lots": '
        "must be a valid resource quantity.",
        ["spec.tasks[0].template.spec.containers[0].resources.requests[memory]"],
    ),
    (
        "numa-policy-needs-whole-cpus",
        with_template(CPU_HALF, **NUMA),
        "the cpu request isn't an integer in spec.task[0] container[0].",
        ["spec.tasks[0].topologyPolicy"],
    ),
    ("numa-policy-whole-cpu-limit", with_template(CPU_TWO, **NUMA), "", []),
    (
        "partition-total-zero",
        job(tasks=[task(replicas=2, partitionPolicy={"totalPartitions": 0, "partitionSize": 2})]),
        "'TotalPartitions' must be greater than 0 in task: worker, job: job-1",
        ["spec.tasks[0].partitionPolicy.totalPartitions"],
    ),
    (
        "partition-size-zero",
        job(tasks=[task(replicas=2, partitionPolicy={"totalPartitions": 2, "partitionSize": 0})]),
        "'PartitionSize' must be greater than 0 in task: worker, job: job-1",
        ["spec.tasks[0].partitionPolicy.partitionSize"],
    ),
    (
        "partition-replicas-mismatch",
        job(tasks=[task(replicas=3, partitionPolicy={"totalPartitions": 2, "partitionSize": 2})]),
        "'Replicas' are not equal to TotalPartitions*PartitionSize in task: worker, job: job-1",
        ["spec.tasks[0].replicas"],
    ),
    (
        "partition-min-available-mismatch",
        job(
            tasks=[
                task(
                    replicas=4,
                    minAvailable=3,
                    partitionPolicy={"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1},
                )
            ]
        ),
        "'MinAvailable' is not equal to MinPartitions*PartitionSize in task: worker, job: job-1",
        ["spec.tasks[0].minAvailable"],
    ),
    (
        "job-min-available-above-replicas",
        job(tasks=[task(replicas=2)], minAvailable=3),
        "job 'minAvailable' should not be greater than total replicas in tasks;",
        ["spec.minAvailable"],
    ),
    (
        "policy-event-and-exit-code",
        policy_job({"event": "PodFailed", "exitCode": 1, "action": "RestartJob"}),
        one_error("must not specify event and exitCode simultaneously"),
        ["spec.policies[0]"],
    ),
    (
        "policy-without-event-or-exit-code",
        policy_job({"action": "RestartJob"}),
        one_error("either event and exitCode should be specified"),
        ["spec.policies[0]"],
    ),
    (
        "policy-unknown-action",
        policy_job({"event": "PodFailed", "action": "Explode"}),
        one_error('spec.policies: Invalid value: "Explode": invalid policy action'),
        ["spec.policies[0].action"],
    ),
    (
        "policy-internal-action",
        policy_job({"event": "PodFailed", "action": "SyncJob"}),
        one_error('spec.policies: Invalid value: "SyncJob": invalid policy action'),
        ["spec.policies[0].action"],
    ),
    (
        "policy-exit-code-zero",
        policy_job({"exitCode": 0, "action": "RestartJob"}),
        one_error("0 is not a valid error code"),
        ["spec.policies[0].exitCode"],
    ),
    (
        "policy-duplicate-exit-code",
        policy_job({"exitCode": 1, "action": "RestartJob"}, {"exitCode": 1, "action": "AbortJob"}),
        one_error("duplicate exitCode 1"),
        ["spec.policies[1].exitCode"],
    ),
    (
        "policy-duplicate-event-within-events",
        policy_job(
            {"events": ["PodFailed", "PodEvicted"], "action": "RestartJob"},
            {"event": "PodEvicted", "action": "AbortJob"},
        ),
        one_error("duplicate event PodEvicted  across different policy"),
        ["spec.policies[1].event"],
    ),
    (
        "policy-wildcard-with-others",
        policy_job(
            {"event": "*", "action": "RestartJob"}, {"event": "PodFailed", "action": "AbortJob"}, on_task=True
        ),
        one_error("if there's * here, no other policy should be here"),
        ["spec.tasks[0].policies"],
    ),
    (
        "policy-two-errors",
        policy_job(
            {"event": "*", "action": "RestartJob"},
            {"event": "PodFailed", "action": "AbortJob"},
            {"exitCode": 0, "action": "AbortJob"},
        ),
        "2 errors occurred:\n\t* 0 is not a valid error code\n\t* if there's * here, no other "
        f"policy should be here\n\n{LISTS}",
        ["spec.policies[2].exitCode", "spec.policies"],
    ),
    (
        "policy-events-list-ok",
        policy_job({"events": ["PodFailed", "Unknown"], "action": "RestartJob", "timeout": "1m"}),
        "",
        [],
    ),
    (
        "unknown-plugin",
        job(plugins={"magic": []}),
        "unable to find job plugin: magic;",
        ["spec.plugins.magic"],
    ),
    (
        "volume-without-mount-path",
        job(volumes=[{"volumeClaimName": "data"}]),
        "mountPath is required;",
        ["spec.volumes[0].mountPath"],
    ),
    (
        "volume-duplicated-mount-path",
        job(
            volumes=[{"mountPath": "/d", "volumeClaimName": "a"}, {"mountPath": "/d", "volumeClaimName": "b"}]
        ),
        "duplicated mountPath: /d;",
        ["spec.volumes[1].mountPath"],
    ),
    (
        "volume-without-claim",
        job(volumes=[{"mountPath": "/d"}]),
        "either VolumeClaim or VolumeClaimName must be specified;",
        ["spec.volumes[0]"],
    ),
    (
        "volume-with-claim-and-name",
        job(
            volumes=[
                {"mountPath": "/d", "volumeClaimName": "a", "volumeClaim": {"accessModes": ["ReadWriteOnce"]}}
            ]
        ),
        "conflict: If you want to use an existing PVC, just specify VolumeClaimName.If you want to "
        "create a new PVC, you do not need to specify VolumeClaimName",
        ["spec.volumes[0]"],
    ),
    (
        "volume-claim-name-invalid",
        job(volumes=[{"mountPath": "/d", "volumeClaimName": "Data"}]),
        "invalid VolumeClaimName Data : [a lowercase RFC 1123 subdomain must consist of lower case "
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')]",
        ["spec.volumes[0].volumeClaimName"],
    ),
    (
        "queue-missing",
        job(queue="nowhere"),
        'unable to find job queue: queue.scheduling.volcano.sh "nowhere" not found;',
        ["spec.queue"],
    ),
    (
        "queue-closed",
        job(queue="closed"),
        "can only submit job to queue with state `Open`, queue `closed` status is `Closed`;",
        ["spec.queue"],
    ),
    ("queue-root", job(queue="root"), "can not submit job to root queue;", ["spec.queue"]),
    (
        "queue-not-leaf",
        job(queue="team"),
        "can only submit job to leaf queue, queue `team` has 1 child queues;",
        ["spec.queue"],
    ),
    ("queue-leaf", job(queue="team-vision"), "", []),
    (
        "priority-class-missing",
        job(priorityClassName="urgent"),
        "no PriorityClass with name urgent was found;",
        ["spec.priorityClassName"],
    ),
    ("priority-class-known", job(priorityClassName="high-priority"), "", []),
    ("priority-class-builtin", job(priorityClassName="system-node-critical"), "", []),
    (
        "depends-on-cycle",
        job(tasks=[task("a", dependsOn={"name": ["b"]}), task("b", dependsOn={"name": ["a"]})]),
        "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG);",
        ["spec.tasks"],
    ),
    (
        "depends-on-missing-task",
        job(tasks=[task("a", dependsOn={"name": ["ghost"]})]),
        "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG);",
        ["spec.tasks"],
    ),
    ("depends-on-chain", job(tasks=[task("a"), task("b", dependsOn={"name": ["a"]})]), "", []),
    (
        "several-rules-concatenate",
        job(tasks=[task(replicas=1, minAvailable=2)], minAvailable=3, plugins={"magic": []}),
        "'minAvailable' is greater than 'replicas' in task: worker, job: job-1; job 'minAvailable' "
        "should not be greater than total replicas in tasks; unable to find job plugin: magic;",
        ["spec.tasks[0].minAvailable", "spec.minAvailable", "spec.plugins.magic"],
    ),
]


@pytest.mark.parametrize(("manifest", "message", "fields"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_job_create_rule(manifest: dict[str, Any], message: str, fields: list[str]) -> None:
    errors = validate_job_create(default_job(manifest), CTX)
    assert compose(errors, "concat") == message
    assert [error.field for error in errors] == fields


def test_every_error_has_a_message_and_a_kubernetes_reason() -> None:
    for _, manifest, _, _ in CASES:
        for error in validate_job_create(default_job(manifest), CTX):
            assert error.message
            assert error.reason.startswith("FieldValue")
