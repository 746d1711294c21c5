"""Volcano's second phase of preempt: inside a gang that was starving, a pending task may take the
place of lower-priority running tasks of its own gang. Pure, like the rest of the actions.

Each swap is its own trial, kept only when the task then fits, and refused when it would deepen
the gang's shortfall (fewer members, overall or of a task role, than before and than its minimum).
Called by `evict.preempt` after the first phase.
"""

from __future__ import annotations

from services.scheduler.core.actions.victims import fits, protected, queue_room
from services.scheduler.core.context import CycleContext
from services.scheduler.core.fairness import queue_blocker
from services.scheduler.core.plan import PREEMPT, Eviction
from services.scheduler.core.snapshot import BOUND, PENDING, PIPELINED, RUNNING
from services.scheduler.core.state import GangView, TaskView


def swap_within(ctx: CycleContext, gang: GangView) -> None:
    """Volcano's preemption between tasks of one job: pending tasks, in task order, until one fails."""
    if not ctx.conf.enabled("priority", "enablePreemptable"):
        return  # the priority plugin is what lets a task outrank its own gang's tasks
    for task in [t for t in gang.tasks if t.status == PENDING and not t.best_effort]:
        if queue_blocker(gang.queue, task.request, ctx.rules) is None and ctx.placer.find(task):
            continue  # it fits without evicting anything: no reason to take a sibling's place
        if task.info.preemption_policy == "Never" or not _swap_one(ctx, gang, task):
            return


def _swap_one(ctx: CycleContext, gang: GangView, task: TaskView) -> bool:
    state = ctx.state
    for node in ctx.placer.static_fit(task).candidates:
        victims = _own_victims_on(ctx, gang, task, node)
        if victims is None:
            continue
        state.begin()
        for victim in victims:
            state.evict(victim)
        if queue_blocker(gang.queue, task.request, ctx.rules) is not None:
            state.rollback()
            return False
        state.assign(task, node, PIPELINED)
        state.commit()
        for victim in victims:
            ctx.evictions.append(
                Eviction(
                    task_uid=victim.info.uid,
                    namespace=victim.info.namespace,
                    name=victim.info.name,
                    node=state.nodes[node].name,
                    reason=PREEMPT,
                    preemptor_gang_uid=gang.uid,
                )
            )
        return True
    return False


def _own_victims_on(ctx: CycleContext, gang: GangView, task: TaskView, node: int) -> list[TaskView] | None:
    """Lower-priority tasks of `task`'s own gang on `node` whose eviction makes it fit, or None."""
    state = ctx.state
    here = [
        v
        for v in state.tasks_on_node[node].values()
        if v.gang is gang
        and v.status in (BOUND, RUNNING)
        and v.info.preemptable
        and v.info.priority < task.info.priority
        and not (task.best_effort and not v.best_effort)
        and not protected(ctx, v)
    ]
    # Least important first: the reverse of task order.
    here.sort(key=lambda v: v.order, reverse=True)
    room = state.future_idle(node)
    freed = [0] * state.space.size
    chosen: list[TaskView] = []
    for victim in here:
        if not ctx.disruption.allows([*chosen, victim], PREEMPT):
            continue  # pdb: a budget forbids it; the next victim may do
        chosen.append(victim)
        for i, amount in victim.request:
            room[i] += amount
            freed[i] += amount
        if fits(room, task.request) and queue_room(ctx, gang, task.request, freed):
            return chosen if _keeps_gang_whole(gang, task, chosen) else None
    return None


def _keeps_gang_whole(gang: GangView, task: TaskView, victims: list[TaskView]) -> bool:
    """A swap may not deepen the gang's shortfall: members after >= min(members before, minimum)."""
    before = gang.ready + gang.waiting
    after = before - len(victims) + 1
    if after < min(before, gang.info.min_member):
        return False
    if not gang.role_minimums_apply():
        return True
    for role, minimum in gang.info.min_task_member.items():
        held = gang.role_ready.get(role, 0) + gang.role_waiting.get(role, 0)
        lost = sum(1 for v in victims if v.info.task_role == role)
        gained = 1 if task.info.task_role == role else 0
        if held - lost + gained < min(held, minimum):
            return False
    return True
