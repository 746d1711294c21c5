"""Volcano's admission rules as pure functions over Kubernetes JSON and an AdmissionContext.

Defaulting returns a new object; validation returns `FieldError`s (empty when accepted), which
`errors.compose` words exactly as Volcano's webhook would.
"""

from .context import (
    BUILTIN_PRIORITY_CLASSES,
    DEFAULT_MAX_OBJECT_BYTES,
    VOLCANO_JOB_PLUGINS,
    AdmissionContext,
    QueueAdmissionFacts,
)
from .errors import FieldError, MessageStyle, Reason, compose
from .jobs import default_job, validate_job_create, validate_job_update
from .podgroups import default_podgroup, validate_podgroup_create
from .queues import (
    default_queue,
    validate_queue_create,
    validate_queue_delete,
    validate_queue_update,
)

__all__ = [
    "BUILTIN_PRIORITY_CLASSES",
    "DEFAULT_MAX_OBJECT_BYTES",
    "VOLCANO_JOB_PLUGINS",
    "AdmissionContext",
    "FieldError",
    "MessageStyle",
    "QueueAdmissionFacts",
    "Reason",
    "compose",
    "default_job",
    "default_podgroup",
    "default_queue",
    "validate_job_create",
    "validate_job_update",
    "validate_podgroup_create",
    "validate_queue_create",
    "validate_queue_delete",
    "validate_queue_update",
]
