"""bus.volcano.sh Commands: which object a Command targets and what the shell does with it.

Volcano deletes a Command before acting on it, so each executes at most once: the shell deletes
it, then feeds `CommandIssued(action)` to the job's `transition`, or `queue_transition(...,
action)` to the queue. Commands for anything else, or with an action that target does not
accept, are deleted and reported, never executed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shared.volcano import keys
from shared.volcano.enums import Action
from shared.volcano.objects import KubeObject

JOB_COMMAND_ACTIONS = frozenset(
    {
        Action.ABORT_JOB,
        Action.RESUME_JOB,
        Action.RESTART_JOB,
        Action.COMPLETE_JOB,
        Action.TERMINATE_JOB,
        Action.RESTART_TASK,
        Action.RESTART_POD,
    }
)
QUEUE_COMMAND_ACTIONS = frozenset({Action.OPEN_QUEUE, Action.CLOSE_QUEUE})


@dataclass(frozen=True)
class CommandDecision:
    """`kind` is "job", "queue" or "ignore"; the target is namespace/name/uid (queues are
    cluster-scoped: no namespace)."""

    kind: str
    action: str
    namespace: str
    name: str
    uid: str
    reason: str = ""


def decide_command(command: Mapping[str, Any]) -> CommandDecision:
    view = KubeObject(command)
    target = command.get("target") or {}
    action = str(command.get("action") or "")
    api_version, kind = target.get("apiVersion"), target.get("kind")
    name, uid = str(target.get("name", "")), str(target.get("uid", ""))
    if api_version == keys.BATCH_API_VERSION and kind == keys.JOB_KIND:
        if action in JOB_COMMAND_ACTIONS:
            return CommandDecision("job", action, str(view.namespace), name, uid)
        return CommandDecision(
            "ignore",
            action,
            str(view.namespace),
            name,
            uid,
            f"action {action} is not valid for a Job",
        )
    if api_version == keys.SCHEDULING_API_VERSION and kind == "Queue":
        if action in QUEUE_COMMAND_ACTIONS:
            return CommandDecision("queue", action, "", name, uid)
        return CommandDecision("ignore", action, "", name, uid, f"action {action} is not valid for a Queue")
    return CommandDecision(
        "ignore",
        action,
        str(view.namespace),
        name,
        uid,
        f"command target {api_version}/{kind} is not handled",
    )


def command_manifest(target: Mapping[str, Any], action: str, namespace: str) -> dict[str, Any]:
    """A Command as vcctl creates it: `generateName: <target>-<action lowercased>-`, the target
    as a controller reference (owner too, so it goes with the target)."""
    view = KubeObject(target)
    ref = {
        "apiVersion": target.get("apiVersion", ""),
        "kind": target.get("kind", ""),
        "name": view.name,
        "uid": view.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": keys.BUS_API_VERSION,
        "kind": "Command",
        "metadata": {
            "generateName": f"{view.name}-{action.lower()}-",
            "namespace": namespace,
            "ownerReferences": [ref],
        },
        "action": action,
        "target": ref,
    }
