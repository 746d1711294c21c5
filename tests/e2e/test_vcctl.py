"""vcctl's commands and `job why` / `queue why`, typed as a user types them, against `phalanx up`.

Each test runs the installed `vcctl` (or `phalanx`) command in a subprocess with the stack's
kubeconfig and checks what it prints, its exit code, and its effect on the cluster (kubectl).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from phalanx import stack as stacks
from tests import waiting
from tests.e2e.conftest import kubectl, up_own_stack

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(300),  # a test, its waits and its clean-up, on a machine shared with others
    pytest.mark.skipif(
        shutil.which("kubectl") is None, reason="kubectl (Debian: kubernetes-client) not installed"
    ),
]
BIN = Path(sys.executable).parent
# vcctl's job columns after the name column, which is as wide as the longest name plus 3.
JOB_COLUMNS = (
    "Creation       Phase       JobType     Replicas    Min   Pending   Running   Succeeded   "
    "Failed    Unknown     RetryCount"
)
WAIT_S = 90.0
# A whole stack acts on its own time: look every half second, for up to WAIT_S.
eventually = partial(waiting.eventually, within=WAIT_S, every=0.5)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[stacks.Stack]:
    """A stack of this module's own: vcctl's tables are as wide as the longest name listed, and
    `why` reads every queue, so jobs and queues other modules leave behind would change them."""
    state_dir = tmp_path_factory.mktemp("vcctl-stack")
    running = up_own_stack(state_dir)
    try:
        yield running
    finally:
        stacks.down(state_dir)


def _command(name: str, module: str) -> list[str]:
    script = BIN / name
    return [str(script)] if script.exists() else [sys.executable, "-m", module]


VCCTL = _command("vcctl", "phalanx.vcctl.app")
PHALANX = _command("phalanx", "phalanx.cli")


def run(command: list[str], stack: stacks.Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command, *args, "--kubeconfig", stack.kubeconfig],
        capture_output=True,
        text=True,
        timeout=120,
    )


def vcctl(stack: stacks.Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return run(VCCTL, stack, *args)


def run_job(stack: stacks.Stack, name: str, pods: int, resources: str, *flags: str) -> None:
    """`vcctl job run` of a gang of `pods` pods, each asking (and limited to) `resources`."""
    ran = vcctl(
        stack,
        "job",
        "run",
        "-N",
        name,
        "-r",
        str(pods),
        "-m",
        str(pods),
        "-R",
        resources,
        "-L",
        resources,
        *flags,
    )
    assert ran.returncode == 0, ran.stderr


def why(stack: stacks.Stack, *args: str) -> str:
    done = run(PHALANX, stack, "job", "why", *args, "--state-dir", stack.state_dir)
    assert done.returncode == 0, done.stderr
    return done.stdout


def job_phase(stack: stacks.Stack, name: str) -> str:
    return kubectl(stack, "get", "vcjob", name, "-o", "jsonpath={.status.state.phase}").stdout


def pod_names(stack: stacks.Stack, job: str) -> list[str]:
    got = kubectl(stack, "get", "pods", "-l", f"volcano.sh/job-name={job}", "-o", "json")
    return sorted(p["metadata"]["name"] for p in json.loads(got.stdout)["items"])


@pytest.fixture
def cleanup(stack: stacks.Stack) -> Iterator[list[tuple[str, ...]]]:
    """kubectl delete arguments to run after the test, so the next one has the cluster to itself.

    Queues go last, once the jobs' pods are gone (a queue that still holds PodGroups is kept)."""
    leftovers: list[tuple[str, ...]] = []
    yield leftovers
    for kind, name in leftovers:
        if kind != "queue":
            kubectl(stack, "delete", kind, name, "--ignore-not-found", "--wait=false")
    jobs = [name for kind, name in leftovers if kind == "vcjob"]
    pods = {name for kind, name in leftovers if kind == "pod"}

    def gone() -> bool:
        names = kubectl(stack, "get", "pods", "-o", "jsonpath={.items[*].metadata.name}").stdout.split()
        return not any(n in pods or any(n.startswith(f"{job}-") for job in jobs) for n in names)

    # Deleted pods terminate gracefully (their grace period) on a machine the other workers load.
    eventually(gone, "the test's pods deleted", within=240)
    for kind, name in leftovers:
        if kind == "queue":
            eventually(
                lambda name=name: vcctl(stack, "queue", "delete", name).returncode in (0, 3),  # type: ignore[misc]
                f"queue {name} deleted",
            )


def test_job_run_list_view_delete_speak_vcctl(stack: stacks.Stack, cleanup: list[tuple[str, ...]]) -> None:
    cleanup.append(("vcjob", "demo"))
    ran = vcctl(
        stack, "job", "run", "--name", "demo", "--replicas", "2", "--min", "2", "-R", "cpu=1,memory=64Mi"
    )
    assert (ran.returncode, ran.stdout) == (0, "run job demo successfully\n"), ran.stderr
    eventually(lambda: job_phase(stack, "demo") == "Running", "demo Running")

    listed = vcctl(stack, "job", "list", "-n", "default")
    assert listed.returncode == 0
    header, *rows = listed.stdout.splitlines()
    assert header == "Name".ljust(len("demo") + 3) + JOB_COLUMNS
    row = next(r.split() for r in rows if r.startswith("demo "))
    # Name Creation Phase JobType Replicas Min Pending Running Succeeded Failed Unknown RetryCount
    assert row[2:] == ["Running", "Batch", "2", "2", "0", "2", "0", "0", "0", "0"]
    assert "demo" not in vcctl(stack, "job", "list", "--selector", "nomatch").stdout
    wide = vcctl(stack, "job", "list", "--all-namespaces", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[0] == "Namespace"
    assert wide[0].split()[-2:] == ["Queue", "Scheduler"]
    as_json = json.loads(vcctl(stack, "job", "list", "-o", "json").stdout)
    assert [j["metadata"]["name"] for j in as_json["items"]] == ["demo"]

    viewed = vcctl(stack, "job", "view", "-N", "demo")
    assert viewed.returncode == 0
    assert "Name:       \tdemo" in viewed.stdout
    assert "Phase:\tRunning" in viewed.stdout

    deleted = vcctl(stack, "job", "delete", "demo")
    assert (deleted.returncode, deleted.stdout) == (0, "delete job demo successfully\n")
    eventually(lambda: not pod_names(stack, "demo"), "demo's pods deleted")
    missing = vcctl(stack, "job", "view", "--name", "demo")
    assert missing.returncode == 3
    assert "job default/demo not found" in missing.stderr
    assert "vcctl job list -n default" in missing.stderr


def test_usage_errors_name_the_flag_and_exit_2(stack: stacks.Stack) -> None:
    no_name = vcctl(stack, "job", "suspend")
    assert no_name.returncode == 2
    assert "job name is mandatory to suspend a particular job" in no_name.stderr
    bad_action = vcctl(stack, "queue", "operate", "-n", "default", "-a", "pause")
    assert bad_action.returncode == 2
    assert "action pause invalid, valid actions are open, close and update" in bad_action.stderr
    bad_requests = vcctl(stack, "job", "run", "-N", "x", "-R", "cpu")
    assert bad_requests.returncode == 2
    assert "--requests: invalid argument syntax cpu" in bad_requests.stderr
    unreachable = subprocess.run(
        [*VCCTL, "job", "list", "--kubeconfig", stack.kubeconfig, "--master", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert unreachable.returncode == 4
    assert "no Kubernetes API answers at http://127.0.0.1:9" in unreachable.stderr


def test_a_suspended_job_loses_its_pods_and_resume_brings_them_back(
    stack: stacks.Stack, cleanup: list[tuple[str, ...]]
) -> None:
    cleanup.append(("vcjob", "pausable"))
    run_job(stack, "pausable", 2, "cpu=1")
    eventually(lambda: job_phase(stack, "pausable") == "Running", "pausable Running")
    assert len(pod_names(stack, "pausable")) == 2

    suspended = vcctl(stack, "job", "suspend", "-N", "pausable")
    assert suspended.returncode == 0, suspended.stderr
    commands = json.loads(kubectl(stack, "get", "commands.bus.volcano.sh", "-o", "json").stdout)["items"]
    assert any(c["action"] == "AbortJob" and c["target"]["name"] == "pausable" for c in commands) or (
        job_phase(stack, "pausable") in ("Aborting", "Aborted")
    ), "suspend goes through an AbortJob Command"
    eventually(lambda: job_phase(stack, "pausable") == "Aborted", "pausable Aborted")
    eventually(lambda: not pod_names(stack, "pausable"), "pausable's pods gone")

    assert vcctl(stack, "job", "resume", "pausable").returncode == 0
    eventually(lambda: job_phase(stack, "pausable") == "Running", "pausable Running again")
    assert len(pod_names(stack, "pausable")) == 2


def test_a_closed_queue_refuses_new_jobs_until_opened(
    stack: stacks.Stack, cleanup: list[tuple[str, ...]]
) -> None:
    cleanup += [("queue", "team-b"), ("vcjob", "after-open")]
    created = vcctl(stack, "queue", "create", "-n", "team-b", "-w", "3", "--capability", "cpu=4,memory=8Gi")
    assert created.returncode == 0, created.stderr
    got = vcctl(stack, "queue", "get", "-n", "team-b").stdout.splitlines()
    assert " ".join(got[0].split()) == "Name Weight State Parent Inqueue Pending Running Unknown Completed"
    assert got[1].split()[:3] == ["team-b", "3", "Open"]
    listed = vcctl(stack, "queue", "list").stdout.splitlines()
    assert listed[0].split() == [
        "Name",
        "Weight",
        "State",
        "Inqueue",
        "Pending",
        "Running",
        "Unknown",
        "Completed",
    ]
    assert any(line.split()[:3] == ["team-b", "3", "Open"] for line in listed[1:])

    assert vcctl(stack, "queue", "operate", "-n", "team-b", "-a", "close").returncode == 0

    def state() -> str:
        return str(json.loads(vcctl(stack, "queue", "get", "team-b", "-o", "json").stdout)["status"]["state"])

    eventually(lambda: state() == "Closed", "team-b Closed")
    refused = vcctl(stack, "job", "run", "-N", "refused", "-q", "team-b")
    assert refused.returncode == 1
    assert (
        "can only submit job to queue with state `Open`, queue `team-b` status is `Closed`" in refused.stderr
    )
    assert "open the queue with `vcctl queue operate -n team-b -a open`" in refused.stderr
    assert kubectl(stack, "get", "vcjob", "refused").returncode != 0

    assert vcctl(stack, "queue", "operate", "team-b", "--action", "open").returncode == 0
    eventually(lambda: state() == "Open", "team-b Open again")
    assert vcctl(stack, "job", "run", "-N", "after-open", "-q", "team-b", "-R", "cpu=1").returncode == 0

    assert vcctl(stack, "queue", "operate", "-n", "team-b", "-a", "update", "-w", "7").returncode == 0
    assert json.loads(vcctl(stack, "queue", "get", "team-b", "-o", "json").stdout)["spec"]["weight"] == 7


def test_version_and_shell_completion(stack: stacks.Stack) -> None:
    version = subprocess.run([*VCCTL, "version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0
    assert version.stdout.startswith("API Version: v1alpha1\nVersion: ")

    def complete(words: str) -> list[str]:
        """What bash's completion asks the command for (the protocol the installed script uses)."""
        env = {**os.environ, "_VCCTL_COMPLETE": "complete_bash", "COMP_WORDS": words}
        env["COMP_CWORD"] = str(len(words.split()) - (0 if words.endswith(" ") else 1))
        done = subprocess.run(VCCTL, capture_output=True, text=True, timeout=60, env=env)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert complete("vcctl job li") == ["list"]
    assert complete("vcctl queue operate -a ") == ["open", "close", "update"]
    assert complete("vcctl job list -o ") == ["json", "yaml", "wide"]
    script = subprocess.run(
        VCCTL,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "_VCCTL_COMPLETE": "source_bash"},
    )
    assert "_vcctl_completion" in script.stdout


# -- job why: four distinct blockers ---------------------------------------------------------


def _apply(stack: stacks.Stack, manifest: str) -> None:
    applied = kubectl(stack, "apply", "-f", "-", stdin=manifest)
    assert applied.returncode == 0, applied.stderr


def _waits(stack: stacks.Stack, name: str, words: str) -> str:
    """`job why` once its answer names `words` (the scheduler records a verdict within cycles)."""
    seen = [""]

    def says() -> bool:
        seen[0] = why(stack, name)
        return words in seen[0]

    try:
        eventually(says, f"`job why {name}` says {words!r}")
    except AssertionError:
        raise AssertionError(f"last answer:\n{seen[0]}") from None
    return seen[0]


def test_why_names_the_queue_capability(stack: stacks.Stack, cleanup: list[tuple[str, ...]]) -> None:
    cleanup += [("queue", "capped"), ("vcjob", "filler"), ("vcjob", "too-big")]
    assert vcctl(stack, "queue", "create", "-n", "capped", "--capability", "cpu=4").returncode == 0
    # A gang larger than the capability itself is refused at submission (admission), so this one
    # fits the capability alone and waits only for what another job of the queue holds.
    run_job(stack, "filler", 1, "cpu=2,memory=1Gi", "-q", "capped")
    eventually(lambda: job_phase(stack, "filler") == "Running", "filler Running")
    run_job(stack, "too-big", 3, "cpu=1,memory=1Gi", "-q", "capped")
    answer = _waits(stack, "too-big", "[capability]")
    assert "queue capped: cpu used 2/4 (capability), the job needs 3" in answer
    assert "needs 1 more cpu in queue capped" in answer
    assert "queue resource quota insufficient: insufficient cpu" in answer  # Volcano's own words
    document = json.loads(
        run(PHALANX, stack, "job", "why", "too-big", "-o", "json", "--state-dir", stack.state_dir).stdout
    )
    assert [b["kind"] for b in document["blockers"]] == ["capability"]


def test_why_names_the_nodes_no_pod_fits(stack: stacks.Stack, cleanup: list[tuple[str, ...]]) -> None:
    cleanup.append(("vcjob", "wide"))
    # 2 x 10 cpu fits the cluster's 32 cpu in total, but no 8-cpu node holds one pod.
    run_job(stack, "wide", 2, "cpu=10,memory=1Gi")
    answer = _waits(stack, "wide", "[nodes]")
    assert "nodes: 4 checked, 4 fail Insufficient cpu" in answer
    assert (
        "waits for 2 node(s) that can each hold cpu=10, memory=1Gi: none of the 4 nodes is so large" in answer
    )
    assert "0/4 nodes are unavailable: 4 Insufficient cpu." in answer
    assert "scheduler.unschedulable" in answer  # its verdicts over time, from the audit stream


HIGH = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: vcctl-high}
value: 1000
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: big-high, namespace: default}
spec:
  minAvailable: 4
  schedulerName: volcano
  priorityClassName: vcctl-high
  tasks:
    - name: worker
      replicas: 4
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: busybox, resources: {requests: {cpu: "7"}}}]
"""


def test_why_names_the_higher_priority_gang_ahead(
    stack: stacks.Stack, cleanup: list[tuple[str, ...]]
) -> None:
    cleanup += [("priorityclass", "vcctl-high"), ("vcjob", "big-high"), ("vcjob", "low")]
    _apply(stack, HIGH)
    eventually(lambda: job_phase(stack, "big-high") == "Running", "big-high Running")
    run_job(stack, "low", 2, "cpu=4")
    answer = _waits(stack, "low", "[priority]")
    assert (
        "ahead in queue default (priority 0): default/big-high (priority 1000, Running, holds cpu=28)"
        in answer
    )
    assert "starts after the gangs ahead are placed or finish" in answer


SHORT = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: short, namespace: default}
spec: {minMember: 3, queue: default}
---
apiVersion: v1
kind: Pod
metadata: {name: short-0, namespace: default, annotations: {scheduling.k8s.io/group-name: short}}
spec: {schedulerName: volcano, containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: short-1, namespace: default, annotations: {scheduling.k8s.io/group-name: short}}
spec: {schedulerName: volcano, containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]}
"""


def test_why_names_a_gang_below_its_minimum(stack: stacks.Stack, cleanup: list[tuple[str, ...]]) -> None:
    cleanup += [("podgroup", "short"), ("pod", "short-0"), ("pod", "short-1")]
    _apply(stack, SHORT)
    answer = _waits(stack, "short", "[minimum]")
    assert answer.startswith("PodGroup default/short:")
    assert "the gang has 2 valid pod(s) but needs at least 3 (minMember)" in answer
    assert "create 1 more pod(s) of the gang, or lower its minAvailable to 2" in answer
    assert "Not enough valid tasks for gang-scheduling, valid: 2, min: 3" in answer


def test_queue_why_shows_share_deserved_and_allocated(
    stack: stacks.Stack, cleanup: list[tuple[str, ...]]
) -> None:
    cleanup += [("queue", "shares"), ("vcjob", "sharer")]
    assert vcctl(stack, "queue", "create", "shares", "-w", "2", "-c", "cpu=6").returncode == 0
    run_job(stack, "sharer", 2, "cpu=2,memory=1Gi", "-q", "shares")
    eventually(lambda: job_phase(stack, "sharer") == "Running", "sharer Running")

    def answer() -> dict[str, object]:
        done = run(PHALANX, stack, "queue", "why", "shares", "-o", "json", "--state-dir", stack.state_dir)
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout))

    eventually(lambda: answer()["allocated"] == {"cpu": "4", "memory": "2Gi"}, "sharer's pods counted")
    document = answer()
    assert document["capability"] == {"cpu": "6"}
    assert document["weight"] == 2
    assert document["state"] == "Open"
    assert document["deserved"] == {"cpu": "4", "memory": "2Gi"}  # capped by what it asks for
    assert document["share"] == 1.0
    text = run(PHALANX, stack, "queue", "why", "shares", "--state-dir", stack.state_dir).stdout
    assert text.startswith("Queue shares: Open, weight 2\n  capability  cpu=6\n")
