"""The svc job plugin: a headless Service, a hosts ConfigMap and a NetworkPolicy per job.

`objects` gives what OnJobAdd creates (ConfigMap `<job>-svc`, Service `<job>`, NetworkPolicy
`<job>` unless `--disable-network-policy`); `on_pod_create` gives each pod its hostname and
subdomain, the `VC_<TASK>_HOSTS` / `VC_<TASK>_NUM` variables and the hosts files under
/etc/volcano (`/etc/volcano/<task>.host`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.controller.core.owners import job_ref
from services.controller.core.plugins.args import parse_flags
from services.controller.core.plugins.hosts import (
    Json,
    add_env,
    all_containers,
    job_name,
    task_hosts,
    tasks,
)
from shared.volcano import keys
from shared.volcano.objects import JobObject

NAME = "svc"
MOUNT_PATH = "/etc/volcano"
_FLAGS: dict[str, str | int | bool] = {
    "publish-not-ready-addresses": False,
    "disable-network-policy": False,
    "inject-hosts-env": True,
}


def configmap_name(job: Json) -> str:
    return f"{job_name(job)}-svc"


def _env_key(task_name: str) -> str:
    return task_name.replace("-", "_")


def hosts_data(job: Json) -> dict[str, str]:
    """The ConfigMap's data: `<task>.host` files and the `VC_<TASK>_HOSTS/NUM` values."""
    data: dict[str, str] = {}
    for task in tasks(job):
        hosts = task_hosts(job, task)
        key = _env_key(str(task.get("name", "")))
        data[f"{key}.host"] = "\n".join(hosts)
        data[f"VC_{key.upper()}_HOSTS"] = ",".join(hosts)
        data[f"VC_{key.upper()}_NUM"] = str(len(hosts))
    return data


def _job_selector(job: Json) -> dict[str, str]:
    view = JobObject(job)
    return {keys.JOB_NAME: str(view.name), keys.JOB_NAMESPACE: str(view.namespace)}


def _meta(job: Json, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": JobObject(job).namespace,
        "ownerReferences": [job_ref(job)],
    }


def objects(job: Json, args: Sequence[str]) -> list[dict[str, Any]]:
    flags = parse_flags(args, _FLAGS)
    found: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(job, configmap_name(job)),
            "data": hosts_data(job),
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(job, job_name(job)),
            "spec": {
                "clusterIP": "None",
                "selector": _job_selector(job),
                "publishNotReadyAddresses": bool(flags["publish-not-ready-addresses"]),
            },
        },
    ]
    if not flags["disable-network-policy"]:
        found.append(
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": _meta(job, job_name(job)),
                "spec": {
                    "podSelector": {"matchLabels": _job_selector(job)},
                    "ingress": [{"from": [{"podSelector": {"matchLabels": _job_selector(job)}}]}],
                    "policyTypes": ["Ingress"],
                },
            }
        )
    return found


def on_pod_create(pod: dict[str, Any], job: Json, args: Sequence[str]) -> None:
    flags = parse_flags(args, _FLAGS)
    spec = pod.setdefault("spec", {})
    spec["hostname"] = spec.get("hostname") or pod["metadata"]["name"]
    spec["subdomain"] = spec.get("subdomain") or job_name(job)
    cm = configmap_name(job)
    if flags["inject-hosts-env"]:
        names = [
            name
            for task in tasks(job)
            for name in (
                f"VC_{_env_key(str(task.get('name', ''))).upper()}_HOSTS",
                f"VC_{_env_key(str(task.get('name', ''))).upper()}_NUM",
            )
        ]
        for container in all_containers(pod):
            add_env(
                container,
                *({"name": n, "valueFrom": {"configMapKeyRef": {"name": cm, "key": n}}} for n in names),
            )
    spec.setdefault("volumes", []).append({"name": cm, "configMap": {"name": cm}})
    for container in all_containers(pod):
        container.setdefault("volumeMounts", []).append({"mountPath": MOUNT_PATH, "name": cm})
