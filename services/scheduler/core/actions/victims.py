"""What every choice of victims in preempt and reclaim respects (evict.py, swap.py). Pure.

Conformance protects critical pods and kube-system; a preemptor must fit in the room its victims
leave on the node, and its queue, with each ancestor, must stay within its capability once the
victims' share is given back.
"""

from __future__ import annotations

from services.scheduler.core.context import CycleContext
from services.scheduler.core.state import GangView, TaskView
from services.scheduler.core.vectors import Sparse, fits_with, over_limit

CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def protected(ctx: CycleContext, victim: TaskView) -> bool:
    """conformance: critical pods and kube-system are never victims."""
    return ctx.conf.enabled("conformance") and (
        victim.info.priority_class_name in CRITICAL_CLASSES or victim.info.namespace == "kube-system"
    )


def fits(room: list[int], request: Sparse) -> bool:
    return fits_with(request, room, [0] * len(room))


def queue_room(ctx: CycleContext, gang: GangView, request: Sparse, freed: list[int]) -> bool:
    queue = gang.queue
    assert queue is not None
    for level in (queue, *queue.ancestors):
        used = [a - f for a, f in zip(level.alloc, freed, strict=True)]
        if over_limit(used, request, level.capability) is not None:
            return False
    return True
