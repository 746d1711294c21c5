"""The ssh job plugin: one key pair per job, in a Secret the job owns, mounted in every container.

`objects` gives the Secret `<job>-ssh` (id_rsa, id_rsa.pub, authorized_keys, config) built from
a key pair the shell supplies (`sshkeys.generate_key_pair`, or the user's `--ssh-private-key` /
`--ssh-public-key`); `on_pod_create` mounts it at the key path. Unlike Volcano we never
overwrite or delete a Secret of that name that the job does not own: see `secret_conflict`.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from services.controller.core.owners import job_ref, owned_by
from services.controller.core.plugins.args import parse_flags
from services.controller.core.plugins.hosts import (
    Json,
    all_containers,
    domain_name,
    job_name,
    listed_count,
    tasks,
)
from shared.volcano.objects import JobObject

NAME = "ssh"
DEFAULT_KEY_PATH = "/root/.ssh"
RELATIVE_PATH = ".ssh"
KEY_FILES = ("id_rsa", "id_rsa.pub", "authorized_keys", "config")
_FLAGS: dict[str, str | int | bool] = {
    "ssh-key-file-path": DEFAULT_KEY_PATH,
    "ssh-private-key": "",
    "ssh-public-key": "",
    "ssh-port": 22,
}


@dataclass(frozen=True)
class KeyPair:
    private_pem: str
    public_openssh: str


def secret_name(job: Json) -> str:
    return f"{job_name(job)}-ssh"


def _port(flags: Mapping[str, str | int | bool]) -> int:
    port = int(flags["ssh-port"])
    return port if 0 < port <= 65535 else 22


def ssh_config(job: Json, port: int) -> str:
    lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    for task in tasks(job):
        for index in range(listed_count(task)):
            domain = domain_name(job, task, index)
            host = domain.split(".", 1)[0]
            lines += [f"Host {host}", f"  HostName {domain}", f"  Port {port}"]
    return "\n".join(lines) + "\n"


def user_key_pair(args: Sequence[str]) -> KeyPair | None:
    """The key pair the user passed as plugin arguments, if any."""
    flags = parse_flags(args, _FLAGS)
    if not flags["ssh-private-key"]:
        return None
    return KeyPair(str(flags["ssh-private-key"]), str(flags["ssh-public-key"]))


def objects(job: Json, args: Sequence[str], keys: KeyPair) -> list[dict[str, Any]]:
    flags = parse_flags(args, _FLAGS)
    keys = user_key_pair(args) or keys
    files = {
        "id_rsa": keys.private_pem,
        "id_rsa.pub": keys.public_openssh,
        "authorized_keys": keys.public_openssh,
        "config": ssh_config(job, _port(flags)),
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": secret_name(job),
                "namespace": JobObject(job).namespace,
                "ownerReferences": [job_ref(job)],
            },
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in files.items()},
        }
    ]


def secret_conflict(existing: Json | None, job: Json) -> str | None:
    """Why the shell must leave an existing `<job>-ssh` Secret alone, or None if it may
    create (absent) or manage (owned by this job) it."""
    if existing is None:
        return None
    uid = str(JobObject(job).uid)
    if owned_by(existing, uid):
        return None
    return (
        f"secret {secret_name(job)} already exists and is not owned by job "
        f"{job_name(job)}; the ssh plugin will not overwrite or delete it"
    )


def on_pod_create(pod: dict[str, Any], job: Json, args: Sequence[str]) -> None:
    flags = parse_flags(args, _FLAGS)
    path = str(flags["ssh-key-file-path"])
    name = secret_name(job)
    pod.setdefault("spec", {}).setdefault("volumes", []).append(
        {
            "name": name,
            "secret": {
                "secretName": name,
                "items": [{"key": k, "path": f"{RELATIVE_PATH}/{k}"} for k in KEY_FILES],
                # 0600 for root's own ~/.ssh, 0644 elsewhere so that a non-root user can read it.
                "defaultMode": 0o600 if path == DEFAULT_KEY_PATH else 0o644,
            },
        }
    )
    for container in all_containers(pod):
        container.setdefault("volumeMounts", []).append(
            {"mountPath": path, "subPath": RELATIVE_PATH, "name": name}
        )
