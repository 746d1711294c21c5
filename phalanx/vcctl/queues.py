"""`queue create|list|get|operate|delete|why`: vcctl's queue commands over the Kubernetes API.

Open and close create a bus.volcano.sh Command (OpenQueue, CloseQueue) owned by the queue, as
vcctl does; update patches the queue's weight (and, in Phalanx, its capability).
"""

from __future__ import annotations

from collections import Counter

import typer

from phalanx.vcctl import kube, output
from phalanx.vcctl.common import KUBECONFIG, MASTER, OUTPUT, check_format, fails_cleanly, pick_name, say

queues = typer.Typer(help="Volcano Queues: create, list, get, operate (open, close, update), delete, why.")
QUEUE_NAME = typer.Option(None, "--name", "-n", help="The name of the queue.")
QUEUE_ARG = typer.Argument(None, help="The name of the queue (instead of --name).", show_default=False)
ACTIONS = ("open", "close", "update")
STATES = ("Open", "Closed")


def _complete_action(incomplete: str) -> list[str]:
    return [a for a in ACTIONS if a.startswith(incomplete)]


def _capability(text: str | None) -> dict[str, str] | None:
    if not text:
        return None
    try:
        return output.parse_resources(text, "--capability")
    except ValueError as error:
        raise kube.CliError(str(error), kube.EXIT_USAGE) from None


def _set_state(cluster: kube.Cluster, queue: kube.Json, action: str) -> None:
    command = cluster.issue_command(queue, "scheduling.volcano.sh/v1beta1", action, kube.COMMAND_NAMESPACE)
    say(f"{action} requested for queue {queue['metadata']['name']} (Command {command['metadata']['name']})")


@queues.command("create")
@fails_cleanly
def create(
    queue_name: str = QUEUE_ARG,
    name: str = typer.Option(None, "--name", "-n", help="The name of the queue (vcctl's default: test)."),
    weight: int = typer.Option(1, "--weight", "-w", min=1, help="The weight of the queue."),
    state: str = typer.Option("Open", "--state", "-S", help="The state of the queue: Open or Closed."),
    capability: str = typer.Option(
        None, "--capability", "-c", help="Its hard limit, e.g. cpu=8,memory=16Gi,nvidia.com/gpu=2."
    ),
    kubeconfig: str = KUBECONFIG,
    master: str = MASTER,
) -> None:
    """Create a queue."""
    name = name or queue_name or "test"
    if state not in STATES:
        raise kube.CliError(f"--state: queue state must be in {list(STATES)}, not {state!r}", kube.EXIT_USAGE)
    spec: kube.Json = {"weight": weight, "reclaimable": True}
    limit = _capability(capability)
    if limit:
        spec["capability"] = limit
    body = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"state": state},
    }
    cluster = kube.connect(kubeconfig, master)
    created = cluster.create_queue(body)
    if state == "Closed":
        _set_state(cluster, {**created, "kind": "Queue"}, "CloseQueue")
    say(f"queue {name} created")


@queues.command("list")
@fails_cleanly
def list_queues(fmt: str = OUTPUT, kubeconfig: str = KUBECONFIG, master: str = MASTER) -> None:
    """List queues: Name, Weight, State and their PodGroups by phase."""
    check_format(fmt)
    cluster = kube.connect(kubeconfig, master)
    found = cluster.list_queues()
    if fmt in ("json", "yaml"):
        print(output.document(found, fmt))
    elif not found:
        print(output.NO_RESOURCES)
    else:
        counts = output.podgroup_counts(cluster.list_podgroups())
        print(output.queue_table(found, counts, wide=fmt == "wide"))


@queues.command("get")
@fails_cleanly
def get(
    queue_name: str = QUEUE_ARG,
    name: str = QUEUE_NAME,
    fmt: str = OUTPUT,
    kubeconfig: str = KUBECONFIG,
    master: str = MASTER,
) -> None:
    """Show one queue."""
    check_format(fmt)
    name = pick_name(
        name, queue_name, "name is mandatory to get the particular queue details", "--name or -n"
    )
    cluster = kube.connect(kubeconfig, master)
    queue = cluster.get_queue(name)
    if fmt in ("json", "yaml"):
        print(output.document(queue, fmt))
        return
    counts = output.podgroup_counts(cluster.list_podgroups()).get(name)
    print(output.queue_get_table(queue, counts or Counter()))


@queues.command("operate")
@fails_cleanly
def operate(
    queue_name: str = QUEUE_ARG,
    name: str = QUEUE_NAME,
    action: str = typer.Option(
        "",
        "--action",
        "-a",
        help="open, close or update.",
        autocompletion=_complete_action,
        show_default=False,
    ),
    weight: int = typer.Option(0, "--weight", "-w", help="The new weight (update)."),
    capability: str = typer.Option(None, "--capability", "-c", help="The new capability (update; Phalanx)."),
    kubeconfig: str = KUBECONFIG,
    master: str = MASTER,
) -> None:
    """Open or close a queue (through a Command), or update its weight."""
    name = pick_name(name, queue_name, "queue name must be specified", "--name or -n")
    if action == "":
        raise kube.CliError("action can not be null (pass --action open, close or update)", kube.EXIT_USAGE)
    if action not in ACTIONS:
        raise kube.CliError(
            f"action {action} invalid, valid actions are open, close and update", kube.EXIT_USAGE
        )
    cluster = kube.connect(kubeconfig, master)
    if action == "update":
        limit = _capability(capability)
        if weight <= 0 and not limit:
            raise kube.CliError(
                f"when update queue {name}, weight must be specified, the value must be greater than 0",
                kube.EXIT_USAGE,
            )
        spec: kube.Json = {}
        if weight > 0:
            spec["weight"] = weight
        if limit:
            spec["capability"] = limit
        cluster.patch_queue(name, {"spec": spec})
        say(f"queue {name} updated")
        return
    queue = cluster.get_queue(name)
    _set_state(cluster, {**queue, "kind": "Queue"}, "OpenQueue" if action == "open" else "CloseQueue")


@queues.command("delete")
@fails_cleanly
def delete(
    queue_name: str = QUEUE_ARG,
    name: str = QUEUE_NAME,
    kubeconfig: str = KUBECONFIG,
    master: str = MASTER,
) -> None:
    """Delete a queue (Volcano refuses while it holds PodGroups, and the default queue always)."""
    name = pick_name(name, queue_name, "Queue name must be specified", "--name or -n")
    kube.connect(kubeconfig, master).delete_queue(name)
    say(f"queue {name} deleted")
