"""Small builders for admission tests: jobs, queues, contexts, AdmissionReviews, patch applying."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import yaml

from services.admission.rules import AdmissionContext, QueueAdmissionFacts

DATA = Path(__file__).parent / "data"


def task(name: str = "worker", replicas: int = 1, **fields: Any) -> dict[str, Any]:
    body = {
        "name": name,
        "replicas": replicas,
        "template": {
            "spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "main", "image": "busybox"}],
            }
        },
    }
    return body | fields


def job(name: str = "job-1", tasks: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"tasks": [task()] if tasks is None else tasks} | spec,
    }


def queue(
    name: str, *, state: str | None = None, annotations: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name} | ({"annotations": annotations} if annotations else {}),
        "spec": spec,
    }
    if state is not None:
        body["status"] = {"state": state}
    return body


def podgroup(name: str = "pg-1", namespace: str = "default", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def context(*views: QueueAdmissionFacts, **fields: Any) -> AdmissionContext:
    """A cluster with the built-in `default` and `root` queues plus `views`."""
    queues = {"default": QueueAdmissionFacts("default"), "root": QueueAdmissionFacts("root")}
    queues |= {view.name: view for view in views}
    return AdmissionContext(queues=queues, **fields)


def admission_review(
    obj: dict[str, Any] | None,
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
    **request: Any,
) -> dict[str, Any]:
    source = obj or old or {}
    group, _, version = source.get("apiVersion", "").rpartition("/")
    body = {
        "uid": "4b5a2f0e-1111-2222-3333-444455556666",
        "kind": {"group": group, "version": version, "kind": source.get("kind", "")},
        "name": (source.get("metadata") or {}).get("name", ""),
        "namespace": (source.get("metadata") or {}).get("namespace"),
        "operation": operation,
        "object": obj,
        "oldObject": old,
    } | request
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": body}


def decode_patch(response: dict[str, Any]) -> list[dict[str, Any]]:
    return json.loads(base64.b64decode(response["patch"])) if "patch" in response else []


def apply_patch(document: Any, operations: list[dict[str, Any]]) -> Any:
    """An independent RFC 6902 applier (add, remove, replace) to check our patches."""
    result = copy.deepcopy(document)
    for operation in operations:
        tokens = [token.replace("~1", "/").replace("~0", "~") for token in operation["path"].split("/")[1:]]
        if not tokens:
            result = copy.deepcopy(operation["value"])
            continue
        parent = result
        for token in tokens[:-1]:
            parent = parent[int(token)] if isinstance(parent, list) else parent[token]
        last = tokens[-1]
        if isinstance(parent, list):
            index = len(parent) if last == "-" else int(last)
            if operation["op"] == "add":
                parent.insert(index, copy.deepcopy(operation["value"]))
            elif operation["op"] == "remove":
                del parent[index]
            else:
                parent[index] = copy.deepcopy(operation["value"])
        elif operation["op"] == "remove":
            del parent[last]
        else:
            assert operation["op"] == "add" or last in parent, f"replace of missing {last}"
            parent[last] = copy.deepcopy(operation["value"])
    return result


def load_yaml(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(path.read_text())
    return document
