"""Checks of single parts of a Job spec: partitions, network topology, volumes, task order.

Pure helpers for `jobs.py` (CREATE and UPDATE rules); each returns `FieldError`s worded as
Volcano's webhook words them, or a plain answer (`is_dag`, `mpi_master`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shared.domain.quantity import QuantityError, parse_quantity

from .errors import FieldError, go_list
from .names import dns1123_subdomain_errors


def is_whole_cpu(cpu: Any) -> bool:
    try:
        value = parse_quantity(cpu)
    except (QuantityError, TypeError):
        return False
    return value > 0 and value.denominator == 1


def partition_errors(task: Mapping[str, Any], path: str, where: str) -> list[FieldError]:
    policy = task.get("partitionPolicy")
    if not isinstance(policy, dict):
        return []
    total, size = int_value(policy.get("totalPartitions")), int_value(policy.get("partitionSize"))
    minimum, min_partitions = task.get("minAvailable"), int_value(policy.get("minPartitions"))
    here = f"{path}.partitionPolicy"
    errors: list[FieldError] = []
    if total <= 0:
        errors.append(
            FieldError(f"{here}.totalPartitions", f"'TotalPartitions' must be greater than 0 {where}")
        )
    elif size <= 0:
        errors.append(FieldError(f"{here}.partitionSize", f"'PartitionSize' must be greater than 0 {where}"))
    elif int_value(task.get("replicas")) != total * size:
        errors.append(
            FieldError(
                f"{path}.replicas",
                f"'Replicas' are not equal to TotalPartitions*PartitionSize {where}",
            )
        )
    elif minimum is not None and min_partitions > 0 and min_partitions * size != int_value(minimum):
        errors.append(
            FieldError(
                f"{path}.minAvailable",
                f"'MinAvailable' is not equal to MinPartitions*PartitionSize {where}",
            )
        )
    return errors + network_topology(policy.get("networkTopology"), f"{here}.networkTopology")


def network_topology(topology: Any, field: str) -> list[FieldError]:
    if (
        isinstance(topology, dict)
        and topology.get("highestTierAllowed") is not None
        and topology.get("highestTierName")
    ):
        message = (
            "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously"
        )
        return [FieldError(field, message, "FieldValueForbidden")]
    return []


def volume_errors(volumes: Sequence[Any]) -> list[FieldError]:
    mounts: set[str] = set()
    for index, volume in enumerate(volumes):
        path = f"spec.volumes[{index}]"
        volume = volume if isinstance(volume, dict) else {}
        mount, claim_name, claim = (
            volume.get("mountPath"),
            volume.get("volumeClaimName"),
            volume.get("volumeClaim"),
        )
        if not mount:
            return [
                FieldError(
                    f"{path}.mountPath",
                    "mountPath is required",
                    "FieldValueRequired",
                    " mountPath is required;",
                )
            ]
        if mount in mounts:
            message = f"duplicated mountPath: {mount}"
            return [FieldError(f"{path}.mountPath", message, "FieldValueDuplicate", f" {message};")]
        if claim is None and not claim_name:
            message = "either VolumeClaim or VolumeClaimName must be specified"
            return [FieldError(path, message, "FieldValueRequired", f" {message};")]
        if claim_name:
            if claim is not None:
                message = (
                    "conflict: If you want to use an existing PVC, just specify VolumeClaimName."
                    "If you want to create a new PVC, you do not need to specify VolumeClaimName"
                )
                return [FieldError(path, message, "FieldValueForbidden")]
            if name_errors := dns1123_subdomain_errors(str(claim_name)):
                message = f"invalid VolumeClaimName {claim_name} : {go_list(name_errors)}"
                return [FieldError(f"{path}.volumeClaimName", message)]
        mounts.add(str(mount))
    return []


def is_dag(tasks: Sequence[Mapping[str, Any]]) -> bool:
    """Kahn's algorithm; a dependency on a task that does not exist is never satisfied."""
    names = [str(task.get("name") or "") for task in tasks]
    waiting = {name: 0 for name in names}
    followers: dict[str, list[str]] = {}
    for task in tasks:
        for needed in (task.get("dependsOn") or {}).get("name") or []:
            followers.setdefault(str(needed), []).append(str(task.get("name") or ""))
            waiting[str(task.get("name") or "")] += 1
    ready = [name for name, count in waiting.items() if count == 0]
    done = 0
    while ready:
        current = ready.pop()
        done += 1
        for follower in followers.get(current, []):
            waiting[follower] -= 1
            if waiting[follower] == 0:
                ready.append(follower)
    return done == len(names)


def mpi_master(arguments: Any) -> str:
    """The `--master` flag of the mpi plugin's arguments (Go flag syntax), default `master`."""
    args = [str(arg) for arg in arguments or []]
    for position, arg in enumerate(args):
        if not arg.startswith("-") or arg in ("-", "--"):
            break  # Go's flag parsing stops at the first non-flag
        key, _, value = arg.lstrip("-").partition("=")
        if key == "master":
            if "=" in arg:
                return value
            return args[position + 1] if position + 1 < len(args) else "master"
    return "master"


def int_value(value: Any) -> int:
    """An integer field's value; absent (or not a number, which the schema refuses) is 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value)
