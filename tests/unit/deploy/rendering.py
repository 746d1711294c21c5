"""Test helper: render the charts in charts/ offline, as `helm template` would, and read them back.

Rendering goes through the Helm v4 SDK packaged as a wheel (helm-python-sdk), so the templates are
exercised by real Helm with no binary, cluster or network. Results are cached per chart and values,
since most tests look at the same default rendering.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

REPO = Path(__file__).resolve().parents[3]
CHARTS = REPO / "charts"
SERVICES = ("watcher", "admission", "controller", "scheduler", "console")
SERVICE_CHARTS = tuple(f"phalanx-{service}" for service in SERVICES)
# Who each service is on PostgreSQL and NATS, where not itself: the console only reads.
READ_ONLY_IDENTITY = {"console": ("reader", "auditor")}


def database_role(service: str) -> str:
    return READ_ONLY_IDENTITY.get(service, (service, service))[0]


def nats_user(service: str) -> str:
    return READ_ONLY_IDENTITY.get(service, (service, service))[1]


ALL_CHARTS = (*SERVICE_CHARTS, "phalanx-crds")
# The library chart the service charts share their helpers and common objects from.
LIBRARY_CHART = "phalanx-common"
RELEASE = "phalanx"
NAMESPACE = "phalanx-system"
RBAC_KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")

Manifest = dict[str, Any]


def render(chart: str, values: Mapping[str, Any] | None = None) -> list[Manifest]:
    """The Kubernetes objects `chart` renders to with `values` (NOTES.txt left out)."""
    return json.loads(_render(chart, json.dumps(values or {}, sort_keys=True)))  # type: ignore[no-any-return]


@functools.cache
def _render(chart: str, values_json: str) -> str:
    with helm.Chart.load(CHARTS / chart) as loaded:
        files = loaded.render(json.loads(values_json), name=RELEASE, namespace=NAMESPACE)
    objects = [
        document
        for path, text in sorted(files.items())
        if path.endswith((".yaml", ".yml"))
        for document in yaml.safe_load_all(text)
        if document
    ]
    return json.dumps(objects)


def of_kind(objects: list[Manifest], kind: str) -> list[Manifest]:
    return [obj for obj in objects if obj["kind"] == kind]


def only(objects: list[Manifest], kind: str) -> Manifest:
    found = of_kind(objects, kind)
    assert len(found) == 1, f"expected one {kind}, got {[o['metadata']['name'] for o in found]}"
    return found[0]


def workload(objects: list[Manifest]) -> Manifest:
    """The chart's one Deployment, or its StatefulSet (the controller with more than one replica)."""
    found = [obj for obj in objects if obj["kind"] in ("Deployment", "StatefulSet")]
    named = [(o["kind"], o["metadata"]["name"]) for o in found]
    assert len(found) == 1, f"expected one workload, got {named}"
    return found[0]


def container(objects: list[Manifest]) -> Manifest:
    """The single container of the chart's Deployment or StatefulSet."""
    containers = workload(objects)["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]  # type: ignore[no-any-return]


def env_of(objects: list[Manifest]) -> dict[str, dict[str, Any]]:
    """The workload's container's environment, by variable name."""
    return {item["name"]: item for item in container(objects).get("env", [])}
