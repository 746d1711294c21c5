"""Volcano Job manifests for manifest-building tests."""

from __future__ import annotations

import copy
from typing import Any


def container(cpu: str = "1", memory: str = "1Gi", **extra: Any) -> dict[str, Any]:
    return {
        "name": "main",
        "image": "busybox",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
        **extra,
    }


def task(name: str, replicas: int, min_available: int | None = None, **template_spec: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [container()], **template_spec}
    raw: dict[str, Any] = {"name": name, "replicas": replicas, "template": {"spec": spec}}
    if min_available is not None:
        raw["minAvailable"] = min_available
    return raw


def job(*tasks: dict[str, Any], plugins: dict[str, list[str]] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": "tf",
            "namespace": "team-a",
            "uid": "u-123",
            "creationTimestamp": "2026-01-01T11:00:00Z",
        },
        "spec": {
            "schedulerName": "volcano",
            "queue": "research",
            "minAvailable": sum(t.get("minAvailable", t["replicas"]) for t in tasks),
            "tasks": copy.deepcopy(list(tasks)),
            **spec,
        },
    }
    if plugins is not None:
        body["spec"]["plugins"] = plugins
    return body


def env_of(pod: dict[str, Any], index: int = 0, *, init: bool = False) -> dict[str, Any]:
    """A container's env as name -> value (or valueFrom)."""
    containers = pod["spec"]["initContainers" if init else "containers"]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in containers[index].get("env", [])}
