"""Carrying out the steps that change the cluster: apply, delete, patch, pod, pods, node, command,
queue and sleep (the runner handles expect).

Plain Kubernetes verbs wherever they exist (create/patch Nodes, pods/eviction, Commands); the
simulator's control API only to end a pod or make a node NotReady. A write the API refuses
(apply, patch, delete) comes back as the refusal text for a following `denied`; anything else
that cannot be done raises `StepError`, which ends the scenario.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import yaml

from phalanx.scenario.kube import Kube, KubeError
from phalanx.scenario.manifests import command_manifest, node_manifest, taint_object
from phalanx.scenario.model import (
    CommandStep,
    DeleteStep,
    NodeStep,
    PatchStep,
    PodsStep,
    PodStep,
    QueueStep,
    Step,
)
from phalanx.scenario.objects import key_of
from phalanx.scenario.observer import Observer
from shared.volcano.job import JOB_API_VERSION
from shared.volcano.queue import QUEUE_API_VERSION

Obj = dict[str, Any]


class StepError(Exception):
    """A step that cannot be carried out (not a refusal a `denied` could expect)."""


def _refusal_or_raise(error: KubeError, what: str) -> str:
    if error.status is None:  # no answer at all: the stack is not there
        raise StepError(f"{what}: {error}") from error
    return f"{what}: {error.message}"


def _documents(text: str) -> list[Obj]:
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as error:
        raise StepError(f"apply: not valid YAML: {error}") from None
    for index, document in enumerate(documents):
        if not isinstance(document, dict) or not document.get("kind"):
            raise StepError(f"apply: document {index} is not a Kubernetes object (no kind)")
        metadata = document.get("metadata") or {}
        if not (metadata.get("name") or metadata.get("generateName")):
            raise StepError(f"apply: document {index} ({document['kind']}) has no metadata.name")
    return documents


def _is_current(pod: Obj) -> bool:
    status, metadata = pod.get("status") or {}, pod.get("metadata") or {}
    return status.get("phase") not in ("Succeeded", "Failed") and not metadata.get("deletionTimestamp")


class Steps:
    def __init__(self, kube: Kube, observer: Observer, sleep: Callable[[float], None] = time.sleep) -> None:
        self._kube, self._observer, self._pause = kube, observer, sleep

    def run(self, step: Step) -> str | None:
        """Carry out one step; the refusal text when the API refused a write, else None."""
        handler = getattr(self, f"_{step.kind}")
        result: str | None = handler(getattr(step, step.kind))
        return result

    # -- writes a `denied` may expect -------------------------------------------------------------

    def _apply(self, text: str) -> str | None:
        refusals = []
        for document in _documents(text):
            metadata = document.get("metadata") or {}
            what = f"{document['kind']} {metadata.get('name') or metadata.get('generateName')}"
            try:
                self._kube.apply(document)
            except KubeError as error:
                refusals.append(_refusal_or_raise(error, what))
        return "; ".join(refusals) or None

    def _delete(self, step: DeleteStep) -> str | None:
        try:
            self._kube.delete(step.kind, step.namespace, step.name)
        except KubeError as error:
            return _refusal_or_raise(error, f"delete {step.kind} {step.name}")
        return None

    def _patch(self, step: PatchStep) -> str | None:
        try:
            self._kube.merge_patch(step.kind, step.namespace, step.name, step.merge)
        except KubeError as error:
            return _refusal_or_raise(error, f"patch {step.kind} {step.name}")
        return None

    # -- everything else ---------------------------------------------------------------------------

    def _act_on_pod(self, namespace: str, name: str, action: str, exit_code: int | None) -> None:
        what = f"pod {namespace}/{name} {action}"
        try:
            if action in ("succeed", "fail"):
                body = {"exitCode": exit_code or 1} if action == "fail" else {}
                self._kube.control(f"/simulator/v1/namespaces/{namespace}/pods/{name}/{action}", body)
            elif action == "evict":
                pod = self._kube.get("Pod", namespace, name)
                if pod is None:
                    raise StepError(f"{what}: no such pod")
                self._observer.note_evicted(pod)
                self._kube.evict(namespace, name)
            else:
                self._kube.delete("Pod", namespace, name)
        except KubeError as error:
            raise StepError(f"{what}: {error.message}") from error

    def _pod(self, step: PodStep) -> None:
        self._act_on_pod(step.namespace, step.name, step.action, step.exit_code)

    def _pods(self, step: PodsStep) -> None:
        selector = step.label_selector()
        try:
            pods = self._kube.list_objects("Pod", step.namespace, selector)
        except KubeError as error:
            raise StepError(f"pods {selector}: {error.message}") from error
        current = sorted((p for p in pods if _is_current(p)), key=lambda p: key_of(p)[1])
        if not current:
            raise StepError(f"pods {step.namespace} {selector}: no current pods to {step.action}")
        for pod in current:
            self._act_on_pod(step.namespace, key_of(pod)[1], step.action, step.exit_code)

    def _node(self, step: NodeStep) -> None:
        kube, name = self._kube, step.name
        try:
            if step.action == "add":
                kube.create(node_manifest(name, step))
            elif step.action == "remove":
                kube.delete("Node", None, name)
            elif step.action in ("cordon", "uncordon"):
                unschedulable = True if step.action == "cordon" else None
                kube.merge_patch("Node", None, name, {"spec": {"unschedulable": unschedulable}})
            elif step.action in ("notready", "ready"):
                kube.control(f"/simulator/v1/nodes/{name}/{step.action}")
            else:
                self._retaint(step)
        except KubeError as error:
            raise StepError(f"node {name} {step.action}: {error.message}") from error

    def _retaint(self, step: NodeStep) -> None:
        assert step.taint is not None
        node = self._kube.get("Node", None, step.name)
        if node is None:
            raise StepError(f"node {step.name} {step.action}: no such node")
        wanted = taint_object(step.taint)
        kept = [
            t
            for t in (node.get("spec") or {}).get("taints") or []
            if (t.get("key"), t.get("effect")) != (wanted["key"], wanted["effect"])
        ]
        taints = [*kept, wanted] if step.action == "taint" else kept
        self._kube.merge_patch("Node", None, step.name, {"spec": {"taints": taints or None}})

    def _command(self, step: CommandStep) -> None:
        what = f"command {step.action} on job {step.namespace}/{step.job}"
        try:
            job = self._kube.get("Job", step.namespace, step.job)
            if job is None:
                raise StepError(f"{what}: no such job")
            self._kube.create(command_manifest(step.namespace, step.action, JOB_API_VERSION, "Job", job))
        except KubeError as error:
            raise StepError(f"{what}: {error.message}") from error

    def _queue(self, step: QueueStep) -> None:
        action = "OpenQueue" if step.action == "open" else "CloseQueue"
        what = f"queue {step.name} {step.action}"
        try:
            queue = self._kube.get("Queue", None, step.name)
            if queue is None:
                raise StepError(f"{what}: no such queue")
            # vcctl puts queue Commands in namespace default.
            self._kube.create(command_manifest("default", action, QUEUE_API_VERSION, "Queue", queue))
        except KubeError as error:
            raise StepError(f"{what}: {error.message}") from error

    def _sleep(self, seconds: float) -> None:
        self._pause(seconds)
