"""`job why NAME` and `queue why NAME`: why a job waits, and how a queue's share stands.

Reads the job and its PodGroup from the Kubernetes API, then (read-only) the scheduler's tables
and the audit stream through `insight`; `explain` turns the facts into sentences. A source that
cannot be reached is named in a note and the answer uses what remains.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import typer

from phalanx.vcctl import explain, kube, output
from phalanx.vcctl.common import KUBECONFIG, MASTER, NAMESPACE, fails_cleanly, pick_name
from phalanx.vcctl.jobs import JOB_ARG, JOB_NAME, jobs
from phalanx.vcctl.queues import QUEUE_ARG, QUEUE_NAME, queues
from shared.volcano.keys import PREDICTED_START as PREDICTED_START_ANNOTATION

DATABASE_URL = typer.Option(
    None,
    envvar="PHALANX_DATABASE_URL",
    help="The scheduler's PostgreSQL (default: the stack of --state-dir).",
)
NATS_URL = typer.Option(
    None, envvar="PHALANX_NATS_URL", help="The audit stream (default: the stack of --state-dir)."
)
STATE_DIR = typer.Option(Path(".phalanx"), "--state-dir", help="Where `phalanx up` keeps its state.")
WHY_OUTPUT = typer.Option(None, "--output", "-o", help="json for scripts.", show_default=False)


def _condition(group: kube.Json | None) -> explain.Verdict | None:
    for condition in ((group or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Unschedulable" and condition.get("status") == "True":
            since = condition.get("lastTransitionTime")
            return explain.Verdict(
                str(condition.get("reason", "")),
                str(condition.get("message", "")),
                _time(since),
            )
    return None


def _time(stamp: object) -> datetime | None:
    return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")) if stamp else None


def _find_group(
    cluster: kube.Cluster, namespace: str, name: str
) -> tuple[kube.Json | None, kube.Json | None]:
    """The job and its PodGroup (`<job>-<uid>`), or — for work other operators create — a PodGroup."""
    try:
        job = cluster.get_job(namespace, name)
    except kube.CliError as error:
        group = cluster.get_podgroup(namespace, name) if error.code == kube.EXIT_NOT_FOUND else None
        if group is None:
            raise
        return None, group
    group = cluster.get_podgroup(namespace, f"{name}-{job['metadata'].get('uid', '')}")
    return job, group or cluster.get_podgroup(namespace, name)


@jobs.command("why")
@fails_cleanly
def job_why(
    job_name: str = JOB_ARG,
    name: str = JOB_NAME,
    namespace: str = NAMESPACE,
    fmt: str = WHY_OUTPUT,
    database_url: str = DATABASE_URL,
    nats_url: str = NATS_URL,
    state_dir: Path = STATE_DIR,
    kubeconfig: str = KUBECONFIG,
    master: str = MASTER,
) -> None:
    """Why a job is not running: Volcano's message, the blockers in order, what would let it start."""
    from phalanx.vcctl import insight  # PostgreSQL, NATS and the scheduler's core: only for `why`

    name = pick_name(name, job_name, "job name is mandatory to explain a particular job", "--name or -N")
    cluster = kube.connect(kubeconfig, master)
    job, group = _find_group(cluster, namespace, name)
    if job is not None:
        label, phase = (
            f"Job {namespace}/{name}",
            ((job.get("status") or {}).get("state") or {}).get("phase", ""),
        )
    else:
        label, phase = f"PodGroup {namespace}/{name}", ((group or {}).get("status") or {}).get("phase", "")
    group_name = group["metadata"]["name"] if group else None
    where = insight.endpoints(state_dir, database_url, nats_url)
    notes: list[str] = []
    view = None
    if where.database_url and group_name:
        try:
            view = insight.run(
                insight.read_scheduler(where.database_url, namespace, group_name, where.scheduler_conf)
            )
        except Exception as error:  # any failure to read leaves the API's part of the answer
            notes.append(f"the scheduler's tables could not be read: {error}")
    elif not where.database_url:
        notes.append("no scheduler database: set PHALANX_DATABASE_URL or --state-dir for blockers")
    elif group_name is None:
        notes.append("the job has no PodGroup yet: the controller has not created it")
    history: list[Any] = []
    if where.nats_url and group_name:
        keys = [("scheduler", namespace, group_name), ("controller", namespace, name)]
        try:
            history = insight.run(insight.read_history(where.nats_url, keys))  # type: ignore[assignment]
        except Exception as error:
            notes.append(f"the audit stream could not be read: {error}")
    assert view is None or isinstance(view, insight.SchedulerView)
    facts = explain.Facts(
        job=label,
        job_phase=phase,
        condition=_condition(group),
        recorded=view.recorded if view else None,
        dry_run=view.dry_run if view else None,
        gang=view.gang if view else None,
        queue=view.queue if view else None,
        ahead=view.ahead if view else (),
        nodes_total=view.nodes_total if view else 0,
        nodes_could_hold=view.nodes_could_hold if view else 0,
        history=tuple(history),
        notes=tuple(notes),
        predicted_start=str(
            ((group or {}).get("metadata") or {}).get("annotations", {}).get(PREDICTED_START_ANNOTATION, "")
        ),
    )
    print(json.dumps(explain.as_document(facts), indent=2) if fmt == "json" else explain.render(facts))


@queues.command("why")
@fails_cleanly
def queue_why(
    queue_name: str = QUEUE_ARG,
    name: str = QUEUE_NAME,
    fmt: str = WHY_OUTPUT,
    database_url: str = DATABASE_URL,
    state_dir: Path = STATE_DIR,
    kubeconfig: str = KUBECONFIG,
    master: str = MASTER,
) -> None:
    """A queue's share: capability, guarantee, deserved, allocated, admitted, and who waits in it."""
    from phalanx.vcctl import insight

    name = pick_name(name, queue_name, "queue name must be specified", "--name or -n")
    cluster = kube.connect(kubeconfig, master)
    queue = cluster.get_queue(name)
    counts = output.podgroup_counts(cluster.list_podgroups()).get(name) or Counter()
    where = insight.endpoints(state_dir, database_url, None)
    if not where.database_url:
        raise kube.CliError(
            "no scheduler database: set PHALANX_DATABASE_URL or pass --state-dir of a running stack",
            kube.EXIT_USAGE,
        )
    view = insight.run(insight.read_waiting(where.database_url, name, where.scheduler_conf))
    assert isinstance(view, tuple)
    facts, waiting = view
    if facts is None:
        facts = explain.QueueFacts(
            name, (queue.get("status") or {}).get("state", "Open"), queue.get("spec", {}).get("weight", 1),
            {}, {}, {}, None, 0.0,
        )  # fmt: skip
    if fmt == "json":
        print(json.dumps(explain.queue_document(facts, counts, waiting), indent=2))
    else:
        print(explain.render_queue(facts, counts, waiting))
