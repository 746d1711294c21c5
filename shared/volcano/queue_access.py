"""Which namespaces may submit to a Queue: Phalanx's annotation, read by admission and the scheduler.

Volcano's Queue has no such field, and a real API server prunes fields its CRD schema does not
declare, so the list lives in an annotation of the Queue:

    metadata:
      annotations:
        phalanx.io/allowed-namespaces: "team-a, team-b"

Unset (or empty) means open to every namespace, as in Volcano. Admission refuses a Job or PodGroup
from another namespace; the scheduler leaves alone (and explains) any that got in before the
annotation was set or while admission was bypassed. Pure: plain data in, plain data out.
"""

from __future__ import annotations

from collections.abc import Mapping

from shared.volcano.keys import ALLOWED_NAMESPACES

QUEUE_FORBIDS_NAMESPACE = "QueueForbidsNamespace"


def allowed_namespaces(annotations: Mapping[str, str] | None) -> frozenset[str] | None:
    """The namespaces the annotation names, or None when the queue is open to all."""
    raw = (annotations or {}).get(ALLOWED_NAMESPACES, "")
    names = frozenset(part.strip() for part in raw.split(",") if part.strip())
    return names or None


def refusal(queue: str, allowed: frozenset[str] | None, namespace: str) -> str | None:
    """Why `namespace` may not submit to `queue` (allowing `allowed`), or None when it may."""
    if allowed is None or namespace in allowed:
        return None
    return (
        f"namespace `{namespace}` may not submit to queue `{queue}`: its annotation "
        f"{ALLOWED_NAMESPACES} allows only {', '.join(sorted(allowed))}"
    )
