"""The allocate and backfill actions: place pending tasks of admitted gangs on nodes.

allocate takes queues in queue order (skipping overused ones) and, in each, the best gang in job
order; it places the gang's pending tasks inside a trial and commits the trial only when the gang
is ready (at least minMember and every task's minimum placed), keeps it when the gang is
pipelined on room that evictions are freeing, and rolls it back otherwise. A gang that is ready
with tasks left over goes back into its queue, so elastic tasks are placed one per turn.
backfill then places BestEffort tasks (no resource request) on any node that passes the filters.
"""

from __future__ import annotations

import heapq

from services.scheduler.core.actions.domain_search import allocate_in_domains, constrained
from services.scheduler.core.context import CycleContext
from services.scheduler.core.devices import DEVICE_CLAIM_UNSATISFIABLE
from services.scheduler.core.fairness import QUEUE_OVERUSED, fair_dims, overused, queue_blocker
from services.scheduler.core.ordering import job_key, queue_key
from services.scheduler.core.predicates import structured_reason
from services.scheduler.core.reservation import RESERVED
from services.scheduler.core.snapshot import ALLOCATED, PENDING, PIPELINED
from services.scheduler.core.state import GangView, TaskView


def allocate(ctx: CycleContext) -> None:
    state, conf = ctx.state, ctx.conf
    per_queue: dict[str, list[tuple[tuple[object, ...], int]]] = {}
    for index, gang in enumerate(state.gangs):
        if ctx.schedulable(gang) and _placeable(gang):
            assert gang.queue is not None
            per_queue.setdefault(gang.queue.name, []).append((job_key(gang, state, conf, ctx.total), index))
    queues = []
    for name, jobs in per_queue.items():
        heapq.heapify(jobs)
        queues.append((queue_key(state.queues[name], conf, state), name))
    heapq.heapify(queues)
    dims = fair_dims(state)
    while queues:
        _, name = heapq.heappop(queues)
        queue, jobs = state.queues[name], per_queue[name]
        if overused(queue, conf, dims):
            for _, index in jobs:
                _block(state.gangs[index], QUEUE_OVERUSED)
            continue
        _, index = heapq.heappop(jobs)
        gang = state.gangs[index]
        if allocate_gang(ctx, gang):
            heapq.heappush(jobs, (job_key(gang, state, conf, ctx.total), index))
        elif ctx.reservations is not None and not (gang.is_ready() or gang.is_pipelined()):
            ctx.reservations.on_blocked(state, ctx.placer, gang)
        if jobs:
            heapq.heappush(queues, (queue_key(queue, conf, state), name))


def _placeable(gang: GangView) -> bool:
    return any((t.status == PENDING and not t.best_effort) or t.status == PIPELINED for t in gang.tasks)


def _block(gang: GangView, reason: str) -> None:
    if gang.block_reason is None:
        gang.block_reason = reason


def allocate_gang(ctx: CycleContext, gang: GangView) -> bool:
    """Place what the gang still needs inside a trial; True when it should get another turn.
    A gang with a network-topology constraint is placed by a search over HyperNode domains."""
    if ctx.topology is not None and constrained(gang):
        return allocate_in_domains(ctx, ctx.topology, gang, lambda: _attempt(ctx, gang))
    return _attempt(ctx, gang)[1]


def _attempt(ctx: CycleContext, gang: GangView) -> tuple[bool, bool]:
    """One trial of the gang's placement: (kept, wants another turn)."""
    state, placer = ctx.state, ctx.placer
    assert gang.queue is not None
    state.begin()
    for task in gang.tasks:
        if task.status == PIPELINED and _room_now(ctx, task):
            state.promote(task)  # the room a previous cycle reserved for it is free now
    todo = [t for t in gang.tasks if t.status == PENDING and not t.best_effort]
    more = False
    failed_roles: set[str] = set()
    for position, task in enumerate(todo):
        if task.info.task_role in failed_roles:
            continue  # its role already failed to fit: the same spec will not fit either
        never = task.info.device_claims and placer.never_satisfiable(task)
        if never:  # no node could ever hold its claims: say so before any other reason
            task.fit_error = placer.fit_error(task)
            _block(gang, DEVICE_CLAIM_UNSATISFIABLE)
            gang.job_fit_error = gang.job_fit_error or never
            break
        blocker = queue_blocker(gang.queue, task.request, ctx.rules)
        if blocker is not None:
            _block(gang, blocker.reason)
            gang.job_fit_error = gang.job_fit_error or blocker.detail
            break
        found = placer.find(task)
        if found is None:
            task.fit_error = placer.fit_error(task)
            _block(gang, structured_reason(placer.first_reason(task) or "Insufficient"))
            failed_roles.add(task.info.task_role)
            if _worth_continuing(gang, todo[position + 1 :], failed_roles):
                continue
            break
        node, pipelined = found
        state.assign(task, node, PIPELINED if pipelined else ALLOCATED)
        if gang.is_ready() and position + 1 < len(todo):
            more = True
            break
    if gang.is_ready() or gang.is_pipelined():
        held_back = _held_back(ctx, gang)
        if held_back is None:
            state.commit()
            return True, more
        state.rollback()
        return _around_reservations(ctx, gang, held_back)
    state.rollback()
    return False, False


def _held_back(ctx: CycleContext, gang: GangView) -> str | None:
    """Reservation backfill's check of a trial about to be committed (core/reservation.py)."""
    if ctx.reservations is None:
        return None
    nodes = {t.node for t in gang.tasks if t.node >= 0 and t.status in (ALLOCATED, PIPELINED)}
    return ctx.reservations.admits(gang, nodes)


def _around_reservations(ctx: CycleContext, gang: GangView, held_back: str) -> tuple[bool, bool]:
    """Try the gang once more on nodes no reservation holds against it (inside the same HyperNode
    domain, when the domain search is trying one); else it waits, Reserved."""
    assert ctx.reservations is not None
    avoid = ctx.reservations.held_against(gang)
    if avoid and not ctx.placer.avoid:
        ctx.placer.avoid = avoid
        try:
            kept, more = _attempt(ctx, gang)
        finally:
            ctx.placer.avoid = frozenset()
        if kept:
            return True, more
    gang.block_reason, gang.job_fit_error = RESERVED, held_back
    return False, False


def _worth_continuing(gang: GangView, rest: list[TaskView], failed_roles: set[str]) -> bool:
    """Volcano's NeedContinueAllocating: can the tasks left still make the gang ready?"""
    if gang.info.min_member >= len(gang.tasks):
        return False
    if gang.role_minimums_apply():
        for role in failed_roles:
            if gang.role_ready.get(role, 0) < gang.info.min_task_member.get(role, 0):
                return False
    left = sum(1 for t in rest if t.info.task_role not in failed_roles)
    return gang.ready + gang.waiting + left >= gang.info.min_member


def _room_now(ctx: CycleContext, task: TaskView) -> bool:
    idle = ctx.state.idle[task.node]
    return all(idle[i] >= 0 for i, _ in task.request) and ctx.state.devices_ready(task)


def backfill(ctx: CycleContext) -> None:
    """Place BestEffort pending tasks of admitted gangs, in queue, job and task order."""
    state, conf = ctx.state, ctx.conf
    # Only gangs with a pending BestEffort task are ordered: ordering costs shares per gang.
    gangs = [
        g
        for g in state.gangs
        if any(t.status == PENDING and t.best_effort for t in g.tasks) and ctx.schedulable(g)
    ]
    gangs.sort(
        key=lambda g: (
            queue_key(g.queue, conf, state) if g.queue else (),
            job_key(g, state, conf, ctx.total),
        )
    )
    for gang in gangs:
        for task in gang.tasks:
            if task.status != PENDING or not task.best_effort:
                continue
            blocker = queue_blocker(gang.queue, task.request, ctx.rules)
            if blocker is not None:
                _block(gang, blocker.reason)
                break
            found = ctx.placer.find(task, pipeline=False)
            if found is None:
                task.fit_error = ctx.placer.fit_error(task)
                _block(gang, structured_reason(ctx.placer.first_reason(task) or "Insufficient"))
                continue
            state.assign(task, found[0], ALLOCATED)
