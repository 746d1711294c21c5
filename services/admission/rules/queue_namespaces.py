"""Admission rule: a Job or PodGroup may enter a queue only from a namespace the queue allows.

The queue's allowed namespaces come from its `phalanx.io/allowed-namespaces` annotation (see
shared.volcano.queue_access); unset means open to all, as in Volcano. Called by the Job and
PodGroup CREATE rules; pure.
"""

from __future__ import annotations

from shared.volcano import queue_access

from .context import AdmissionContext
from .errors import FieldError


def namespace_errors(queue: str, namespace: str, ctx: AdmissionContext, *, listed: bool) -> list[FieldError]:
    """The refusal of `namespace` by `queue`, if any; `listed` words it as one of a Job's errors."""
    view = ctx.queues.get(queue)
    if view is None:
        return []  # the missing queue is reported by its own rule
    message = queue_access.refusal(queue, view.allowed_namespaces, namespace)
    if message is None:
        return []
    return [FieldError("spec.queue", message, "FieldValueForbidden", f" {message};" if listed else None)]
