"""`job run|list|view|suspend|resume|delete|why`: vcctl's job commands over the Kubernetes API.

Suspend and resume create a bus.volcano.sh Command (AbortJob, ResumeJob) owned by the job, as
vcctl does, so the controller handles them the same whichever tool issued them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
import yaml

from phalanx.vcctl import kube, output, views
from phalanx.vcctl.common import (
    KUBECONFIG,
    MASTER,
    NAMESPACE,
    OUTPUT,
    check_format,
    fails_cleanly,
    pick_name,
    say,
)

jobs = typer.Typer(help="Volcano Jobs: run, list, view, suspend, resume, delete, and why one waits.")
JOB_NAME = typer.Option(None, "--name", "-N", help="The name of the job.")
JOB_ARG = typer.Argument(None, help="The name of the job (instead of --name).", show_default=False)


def read_job_file(path: Path) -> dict[str, Any]:
    if not path.name.endswith((".yaml", ".yml")):
        raise kube.CliError(f"{path}: only support yaml file", kube.EXIT_USAGE)
    try:
        body = yaml.safe_load(path.read_text())
    except OSError as error:
        raise kube.CliError(f"failed to read file, err: {error}", kube.EXIT_USAGE) from None
    except yaml.YAMLError as error:
        raise kube.CliError(f"Failed to unmarshal file {path}, err: {error}", kube.EXIT_USAGE) from None
    if not isinstance(body, dict) or body.get("kind") != "Job":
        raise kube.CliError(f"{path}: expected a batch.volcano.sh/v1alpha1 Job", kube.EXIT_USAGE)
    return body


def job_from_flags(
    name: str,
    namespace: str,
    image: str,
    min_available: int,
    replicas: int,
    requests: str,
    limits: str,
    scheduler: str,
    queue: str | None,
) -> dict[str, Any]:
    """The one-task job vcctl builds from its flags."""
    try:
        resources = {
            "requests": output.parse_resources(requests, "--requests"),
            "limits": output.parse_resources(limits, "--limits"),
        }
    except ValueError as error:
        raise kube.CliError(str(error), kube.EXIT_USAGE) from None
    spec: dict[str, Any] = {
        "minAvailable": min_available,
        "schedulerName": scheduler,
        "tasks": [
            {
                "replicas": replicas,
                "template": {
                    "metadata": {"name": name, "labels": {"job.volcano.sh": name}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": name,
                                "image": image,
                                "imagePullPolicy": "IfNotPresent",
                                "resources": resources,
                            }
                        ],
                    },
                },
            }
        ],
    }
    if queue:
        spec["queue"] = queue
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


@jobs.command("run")
@fails_cleanly
def run(
    name: str = typer.Option("", "--name", "-N", help="The name of the job."),
    namespace: str = NAMESPACE,
    image: str = typer.Option("busybox", "--image", "-i", help="The container image of the job."),
    min_available: int = typer.Option(1, "--min", "-m", help="The minimal available tasks of the job."),
    replicas: int = typer.Option(1, "--replicas", "-r", help="The total tasks of the job."),
    requests: str = typer.Option("cpu=1000m,memory=100Mi", "--requests", "-R", help="Each task's requests."),
    limits: str = typer.Option("cpu=1000m,memory=100Mi", "--limits", "-L", help="Each task's limits."),
    scheduler: str = typer.Option("volcano", "--scheduler", "-S", help="The scheduler for this job."),
    queue: str = typer.Option(None, "--queue", "-q", help="The queue (Phalanx; default: the default queue)."),
    filename: Path = typer.Option(None, "--filename", "-f", help="A YAML file holding the job."),
    kubeconfig: str = KUBECONFIG,
    master: str = MASTER,
) -> None:
    """Create a job from a YAML file (-f), or a one-task job from the flags."""
    if filename is not None:
        body = read_job_file(filename)
        meta = body.setdefault("metadata", {})
        if name:
            meta["name"] = name
        namespace = meta.setdefault("namespace", namespace)
        if not meta.get("name"):
            raise kube.CliError(
                f"{filename}: job name cannot be left blank (set metadata.name or --name)", kube.EXIT_USAGE
            )
    else:
        if not name:
            raise kube.CliError("job name cannot be left blank (pass --name/-N)", kube.EXIT_USAGE)
        body = job_from_flags(
            name, namespace, image, min_available, replicas, requests, limits, scheduler, queue
        )
    try:
        created = kube.connect(kubeconfig, master).create_job(namespace, body)
    except kube.CliError as error:
        queue_name = body.get("spec", {}).get("queue") or "default"
        if "queue with state `Open`" in error.message:
            opening = f"vcctl queue operate -n {queue_name} -a open"
            error.message += f"\nopen the queue with `{opening}`, or pick another with --queue"
        raise
    print(f"run job {created['metadata']['name']} successfully")


@jobs.command("list")
@fails_cleanly
def list_jobs(
    namespace: str = NAMESPACE,
    all_namespaces: bool = typer.Option(False, "--all-namespaces", "-A", help="List jobs in all namespaces."),
    selector: str = typer.Option("", "--selector", help="Only jobs whose name contains this text."),
    scheduler: str = typer.Option("", "--scheduler", "-S", help="Only jobs with this scheduler name."),
    queue: str = typer.Option("", "--queue", "-q", help="Only jobs in this queue."),
    fmt: str = OUTPUT,
    kubeconfig: str = KUBECONFIG,
    master: str = MASTER,
) -> None:
    """List jobs with vcctl's columns: Name, Creation, Phase, JobType, Replicas, Min, pod counts."""
    check_format(fmt)
    found = kube.connect(kubeconfig, master).list_jobs(None if all_namespaces else namespace)
    shown = [
        job
        for job in found
        if selector in job["metadata"]["name"]
        and (not scheduler or job.get("spec", {}).get("schedulerName") == scheduler)
        and (not queue or job.get("spec", {}).get("queue", "default") == queue)
    ]
    if fmt in ("json", "yaml"):
        print(output.document(shown, fmt))
    elif not shown:
        print(output.NO_RESOURCES)
    else:
        print(output.job_table(shown, all_namespaces=all_namespaces, wide=fmt == "wide"))


@jobs.command("view")
@fails_cleanly
def view(
    job_name: str = JOB_ARG,
    name: str = JOB_NAME,
    namespace: str = NAMESPACE,
    fmt: str = OUTPUT,
    kubeconfig: str = KUBECONFIG,
    master: str = MASTER,
) -> None:
    """Show a job in full: metadata, spec, status and its events."""
    check_format(fmt)
    name = pick_name(name, job_name, "job name is mandatory to view a particular job", "--name or -N")
    cluster = kube.connect(kubeconfig, master)
    job = cluster.get_job(namespace, name)
    if fmt in ("json", "yaml"):
        print(output.document(job, fmt))
        return
    events = [e for e in cluster.list_events(namespace) if views.about_job(e, job)]
    print(views.describe_job(job))
    print(views.describe_events(events))


def _command(
    action: str,
    verb: str,
    job_name: str | None,
    name: str | None,
    namespace: str,
    kubeconfig: str,
    master: str,
) -> None:
    name = pick_name(name, job_name, f"job name is mandatory to {verb} a particular job", "--name or -N")
    cluster = kube.connect(kubeconfig, master)
    job = cluster.get_job(namespace, name)
    command = cluster.issue_command(job, "batch.volcano.sh/v1alpha1", action, namespace)
    issued = command["metadata"]["name"]
    say(f"{verb} requested for job {namespace}/{name} (Command {issued}, action {action})")


@jobs.command("suspend")
@fails_cleanly
def suspend(
    job_name: str = JOB_ARG,
    name: str = JOB_NAME,
    namespace: str = NAMESPACE,
    kubeconfig: str = KUBECONFIG,
    master: str = MASTER,
) -> None:
    """Suspend a job: its pods are deleted and it waits, Aborted, until resumed (Command AbortJob)."""
    _command("AbortJob", "suspend", job_name, name, namespace, kubeconfig, master)


@jobs.command("resume")
@fails_cleanly
def resume(
    job_name: str = JOB_ARG,
    name: str = JOB_NAME,
    namespace: str = NAMESPACE,
    kubeconfig: str = KUBECONFIG,
    master: str = MASTER,
) -> None:
    """Resume a suspended job (Command ResumeJob)."""
    _command("ResumeJob", "resume", job_name, name, namespace, kubeconfig, master)


@jobs.command("delete")
@fails_cleanly
def delete(
    job_name: str = JOB_ARG,
    name: str = JOB_NAME,
    namespace: str = NAMESPACE,
    kubeconfig: str = KUBECONFIG,
    master: str = MASTER,
) -> None:
    """Delete a job (its pods and PodGroup go with it)."""
    name = pick_name(name, job_name, "job name is mandatory to delete a particular job", "--name or -N")
    kube.connect(kubeconfig, master).delete_job(namespace, name)
    print(f"delete job {name} successfully")
