"""The figures of each queue at the end of a cycle, as plain data for the shell's metrics.

`plan_cycle` calls `queue_figures` after the actions ran, so allocated includes what this cycle
placed, and returns them in `CyclePlan.queues`; the shell sets Volcano's queue gauges from them
(`volcano_queue_allocated_milli_cpu`, `_deserved_`, `_share`, `_overused`, ...). Nothing is computed
here that the actions did not already decide: deserved and share are proportion's, overused is the
test allocate itself applies.
"""

from __future__ import annotations

from services.scheduler.core.context import CycleContext
from services.scheduler.core.fairness import fair_dims, overused, queue_share
from services.scheduler.core.plan import QueueFigures


def queue_figures(ctx: CycleContext) -> tuple[QueueFigures, ...]:
    state = ctx.state
    dims = fair_dims(state)
    return tuple(
        QueueFigures(
            name=queue.name,
            weight=queue.info.weight,
            allocated=state.space.resources(queue.alloc),
            request=state.space.resources(queue.request),
            deserved=state.space.resources(queue.deserved) if queue.deserved is not None else None,
            # Only the dimensions the queue limits: an unnamed one has no capability to show.
            capability=state.space.resources(queue.capability) if queue.info.capability else None,
            share=queue_share(queue, dims),
            overused=overused(queue, ctx.conf, dims),
        )
        for queue in sorted(state.queues.values(), key=lambda q: q.name)
    )
