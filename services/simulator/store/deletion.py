"""How a deletion proceeds, as kube-apiserver and the garbage collector decide it: pure rules.

The store asks these when a delete arrives: how long the object's grace period is (pods that a
kubelet runs get their `terminationGracePeriodSeconds`, everything else none), whether the
deletion must wait (finalizers, the `foregroundDeletion` finalizer while blocking dependents
remain, a grace period) and what the object looks like once marked (`deletionTimestamp`,
`deletionGracePeriodSeconds`). Follows https://kubernetes.io/docs/concepts/architecture/garbage-collection/,
https://kubernetes.io/docs/concepts/overview/working-with-objects/finalizers/ and
https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from services.simulator.store import errors

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
POLICIES = ("Background", "Foreground", "Orphan")
DEFAULT_POD_GRACE_SECONDS = 30


def policy(options: dict[str, Any]) -> str:
    """The propagation policy of DeleteOptions (Background when unset); 400 for another word."""
    chosen = options.get("propagationPolicy")
    if chosen is None and options.get("orphanDependents") is not None:
        chosen = "Orphan" if options["orphanDependents"] else "Background"
    chosen = chosen or "Background"
    if chosen not in POLICIES:
        raise errors.bad_request(
            f'propagationPolicy: Unsupported value: "{chosen}": supported values: '
            '"Foreground", "Background", "Orphan"'
        )
    return str(chosen)


def requested_grace(options: dict[str, Any]) -> int | None:
    """DeleteOptions.gracePeriodSeconds, or None when the client left it to the server."""
    given = options.get("gracePeriodSeconds")
    if given is None or given == "":
        return None
    try:
        return int(given)
    except (TypeError, ValueError):
        message = f"gracePeriodSeconds: Invalid value: {given!r}: must be an integer"
        raise errors.bad_request(message) from None


def pod_grace(pod: dict[str, Any], requested: int | None) -> int:
    """The grace period of a pod's deletion, as the pod strategy's CheckGracefulDelete decides.

    A pod no kubelet runs (unbound) or whose containers have ended goes at once; otherwise the
    request's period, else the pod's `terminationGracePeriodSeconds` (30 by default). A negative
    request is read as 1, the shortest graceful period.
    """
    phase = (pod.get("status") or {}).get("phase")
    if not (pod.get("spec") or {}).get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    if requested is None:
        spec_grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
        requested = DEFAULT_POD_GRACE_SECONDS if spec_grace is None else int(spec_grace)
    return 1 if requested < 0 else requested


def marked(obj: dict[str, Any], now: datetime, grace: int, finalizers: list[str]) -> dict[str, Any]:
    """`obj` marked for deletion: due `grace` seconds from now, held by `finalizers`."""
    metadata = {
        **obj["metadata"],
        "deletionTimestamp": _timestamp(now + timedelta(seconds=grace)),
        "deletionGracePeriodSeconds": grace,
    }
    if finalizers:
        metadata["finalizers"] = finalizers
    else:
        metadata.pop("finalizers", None)
    return {**obj, "metadata": metadata}


def shortened(obj: dict[str, Any], now: datetime, grace: int) -> dict[str, Any] | None:
    """A second delete of a pod already terminating may only shorten its period; None if it
    does not."""
    current = obj["metadata"].get("deletionGracePeriodSeconds")
    if current is not None and grace >= int(current):
        return None
    metadata = {
        **obj["metadata"],
        "deletionTimestamp": _timestamp(now + timedelta(seconds=grace)),
        "deletionGracePeriodSeconds": grace,
    }
    return {**obj, "metadata": metadata}


def ready_to_remove(metadata: dict[str, Any]) -> bool:
    """Whether a marked object may leave storage now: no finalizers and no grace left to wait."""
    return (
        bool(metadata.get("deletionTimestamp"))
        and not metadata.get("finalizers")
        and not int(metadata.get("deletionGracePeriodSeconds") or 0)
    )


def blocks(reference: dict[str, Any]) -> bool:
    """Whether an ownerReference holds its owner's foreground deletion until the dependent goes."""
    return bool(reference.get("blockOwnerDeletion"))


def _timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
