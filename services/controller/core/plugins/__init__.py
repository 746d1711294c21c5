"""Volcano's job plugins (env, svc, ssh, pytorch, tensorflow, mpi, ray, hcclrank) as pure manifest
functions.

`apply_pod_plugins` is OnPodCreate for every plugin the job names (called by `pods.build_pod`);
`plugin_objects` is OnJobAdd: the Service, ConfigMap, NetworkPolicy and Secret the shell must
create (and ray's head Service), each with a controller reference to the Job. Plugins apply in
the order the Job lists them (Volcano walks a Go map, so any order is as faithful; ours is at least stable).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from services.controller.core.plugins import env, hcclrank, mpi, pytorch, ray, ssh, svc, tensorflow
from services.controller.core.plugins.args import plugin_args
from services.controller.core.plugins.ssh import KeyPair
from shared.volcano.objects import KubeObject

PodHook = Callable[[dict[str, Any], Mapping[str, Any], Sequence[str]], None]
POD_HOOKS: dict[str, PodHook] = {
    env.NAME: env.on_pod_create,
    svc.NAME: svc.on_pod_create,
    ssh.NAME: ssh.on_pod_create,
    pytorch.NAME: pytorch.on_pod_create,
    tensorflow.NAME: tensorflow.on_pod_create,
    mpi.NAME: mpi.on_pod_create,
    ray.NAME: ray.on_pod_create,
    hcclrank.NAME: hcclrank.on_pod_create,
}
KNOWN_PLUGINS = frozenset(POD_HOOKS)

__all__ = ["KNOWN_PLUGINS", "KeyPair", "apply_pod_plugins", "plugin_object_names", "plugin_objects"]


def _job_plugins(job: Mapping[str, Any]) -> list[str]:
    return [str(name) for name in ((job.get("spec") or {}).get("plugins") or {})]


def apply_pod_plugins(job: Mapping[str, Any], pod: dict[str, Any]) -> dict[str, Any]:
    """Mutate `pod` (a manifest being built) as each of the job's plugins does on creation."""
    for name in _job_plugins(job):
        hook = POD_HOOKS.get(name)
        if hook is not None:
            hook(pod, job, plugin_args(job, name) or [])
    return pod


def plugin_objects(
    job: Mapping[str, Any],
    ssh_keys: KeyPair | None = None,
    plugins: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """The objects the job's plugins (or just `plugins`) own: svc's ConfigMap, Service and
    NetworkPolicy, ssh's Secret. The ssh Secret needs `ssh_keys` unless the user passed keys."""
    wanted = [p for p in _job_plugins(job) if plugins is None or p in plugins]
    found: list[dict[str, Any]] = []
    if svc.NAME in wanted:
        found += svc.objects(job, plugin_args(job, svc.NAME) or [])
    if ssh.NAME in wanted:
        args = plugin_args(job, ssh.NAME) or []
        keys = ssh.user_key_pair(args) or ssh_keys
        if keys is None:
            raise ValueError("the ssh plugin needs a key pair: pass ssh_keys")
        found += ssh.objects(job, args, keys)
    if ray.NAME in wanted and svc.NAME not in _job_plugins(job):
        found += ray.objects(job, plugin_args(job, ray.NAME) or [])
    return found


def plugin_object_names(
    job: Mapping[str, Any], plugins: Sequence[str] | None = None
) -> list[tuple[str, str]]:
    """(kind, name) of the objects `plugin_objects` would give, without needing ssh keys: what
    `DeletePluginResources` deletes (only those the job owns)."""
    wanted = [p for p in _job_plugins(job) if plugins is None or p in plugins]
    names: list[tuple[str, str]] = []
    if svc.NAME in wanted:
        names += [(o["kind"], KubeObject(o).name) for o in svc.objects(job, plugin_args(job, svc.NAME) or [])]
    if ssh.NAME in wanted:
        names.append(("Secret", ssh.secret_name(job)))
    if ray.NAME in wanted and svc.NAME not in _job_plugins(job):
        head = ray.objects(job, plugin_args(job, ray.NAME) or [])
        names += [(o["kind"], KubeObject(o).name) for o in head]
    return names
