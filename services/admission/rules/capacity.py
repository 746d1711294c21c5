"""A gang that can never fit its queue: refused at submission, naming the queue (as Armada does).

Called by `jobs.validate_job_create` once the queue is known to exist. Volcano accepts such a job
and leaves it Pending forever; a queue's capability is a hard limit, so a job whose smallest
possible gang already exceeds it can never start. The bound used is a lower one, so no job that
could fit is ever refused: for each resource alone, the `minAvailable` pods that ask least of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shared.domain.quantity import QuantityError, format_milli, to_milli
from shared.domain.resources import MEMORY, pod_requests

from .context import QueueAdmissionFacts
from .errors import FieldError
from .job_checks import int_value


def capability_errors(
    tasks: Sequence[Mapping[str, Any]], min_available: int, queue: QueueAdmissionFacts
) -> list[FieldError]:
    if not queue.capability or min_available <= 0:
        return []
    try:
        capability = {name: to_milli(amount) for name, amount in queue.capability.items()}
        per_task = [(_request(task), int_value(task.get("replicas"))) for task in tasks]
    except (QuantityError, TypeError, AttributeError):
        return []  # malformed amounts are the schema's and the template rules' to report
    for resource, limit in sorted(capability.items()):
        need = _least(resource, per_task, min_available)
        if need > limit:
            binary = resource == MEMORY
            message = (
                f"the job's gang of {min_available} pods needs at least "
                f"{format_milli(need, binary=binary)} {resource}, more than queue `{queue.name}` "
                f"may ever use (capability {format_milli(limit, binary=binary)})"
            )
            return [FieldError("spec.minAvailable", message, "FieldValueForbidden", f" {message};")]
    return []


def _request(task: Mapping[str, Any]) -> Mapping[str, int]:
    spec = (task.get("template") or {}).get("spec") or {}
    return pod_requests(spec.get("containers") or [], spec.get("initContainers") or [], spec.get("overhead"))


def _least(resource: str, per_task: list[tuple[Mapping[str, int], int]], count: int) -> int:
    """The least `count` pods can ask of `resource`: the cheapest tasks' pods first."""
    total = 0
    for request, replicas in sorted(per_task, key=lambda pair: pair[0].get(resource, 0)):
        taken = min(replicas, count)
        total += taken * request.get(resource, 0)
        count -= taken
        if count <= 0:
            break
    return total
