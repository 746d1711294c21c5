"""The preempt and reclaim actions: make room for starving gangs by evicting other tasks.

preempt takes victims from lower-priority gangs of the same queue; reclaim takes them from
other, reclaimable queues that hold more than they deserve. Both are gang-aware: a starving gang
(fewer than minMember placed or waiting) is pipelined task by task inside a trial, each task on
the first node where the room already freeing plus the chosen victims fits it, and the trial is
committed only if the whole gang then reaches its minimum, so nothing is evicted for a gang that
would still not fit. A victim gang loses single tasks only while it stays at or above its
minimum; otherwise it is evicted whole. Pipelined preemptors become nominations: the freed room
is reserved for them and, being pipelined, they are not starving, so no new evictions follow.

preempt then runs Volcano's second phase, inside each gang that was starving (swap.py): a pending
task may take the place of lower-priority running tasks of its own gang.

With the pdb plugin, no set of victims may take more from a PodDisruptionBudget's pods than its
disruptionsAllowed (disruption.py): a batch that would is passed over for other victims.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

from services.scheduler.core.actions import evict_cost
from services.scheduler.core.actions.domain_search import constrained
from services.scheduler.core.actions.swap import swap_within
from services.scheduler.core.actions.victims import fits, protected, queue_room
from services.scheduler.core.context import CycleContext
from services.scheduler.core.fairness import fair_dims, overused, queue_blocker
from services.scheduler.core.fairshare import give_back_key
from services.scheduler.core.ordering import job_key, queue_key, seconds_of
from services.scheduler.core.plan import PREEMPT, RECLAIM, Eviction
from services.scheduler.core.snapshot import ALLOCATED, BOUND, PENDING, PIPELINED, RUNNING
from services.scheduler.core.state import GangView, TaskView


def preempt(ctx: CycleContext) -> None:
    _run(ctx, PREEMPT)


def reclaim(ctx: CycleContext) -> None:
    _run(ctx, RECLAIM)


def _run(ctx: CycleContext, mode: str) -> None:
    state, conf = ctx.state, ctx.conf
    dims = fair_dims(state)
    # Gangs with a network-topology constraint are left out, as Volcano's preempt and reclaim
    # leave them out: evicting for room wherever a pod fits would break their domain.
    topology = ctx.topology
    starving = [
        g
        for g in state.gangs
        if ctx.schedulable(g)
        and g.is_starving()
        and any(t.status == PENDING and not t.best_effort for t in g.tasks)
        and not (topology is not None and constrained(g))
    ]
    if mode == RECLAIM:
        starving = [g for g in starving if g.queue and not overused(g.queue, conf, dims)]
    starving.sort(
        key=lambda g: (
            queue_key(g.queue, conf, state) if g.queue else (),
            job_key(g, state, conf, ctx.total),
        )
    )
    for gang in starving:
        if gang.is_starving():
            _make_room(ctx, gang, mode)
    if mode == PREEMPT:
        for gang in starving:
            swap_within(ctx, gang)


def _make_room(ctx: CycleContext, gang: GangView, mode: str) -> None:
    state, run = ctx.state, ctx.preemption
    assert gang.queue is not None
    notes_before = len(run.notes) if run is not None else 0
    state.begin()
    evicted: list[TaskView] = []
    for task in [t for t in gang.tasks if t.status == PENDING and not t.best_effort]:
        if gang.is_pipelined():
            break
        if task.info.preemption_policy == "Never" or not _place(ctx, gang, task, mode, evicted):
            break
    if not gang.is_pipelined():
        state.rollback()
        if run is not None:
            del run.notes[notes_before:]  # a trial given up explains nothing
        return
    state.commit()
    if run is not None:
        evict_cost.spend(run, evicted)
    for victim in evicted:
        ctx.evictions.append(
            Eviction(
                task_uid=victim.info.uid,
                namespace=victim.info.namespace,
                name=victim.info.name,
                node=state.nodes[victim.node].name,
                reason=mode,
                preemptor_gang_uid=gang.uid,
            )
        )


def _place(ctx: CycleContext, gang: GangView, task: TaskView, mode: str, evicted: list[TaskView]) -> bool:
    state, placer = ctx.state, ctx.placer
    if queue_blocker(gang.queue, task.request, ctx.rules) is None:
        found = placer.find(task)
        if found is not None:
            state.assign(task, found[0], PIPELINED)
            return True
    for node, victims in _victim_options(ctx, gang, task, mode, evicted):
        for victim in victims:
            state.evict(victim)
            evicted.append(victim)
        if queue_blocker(gang.queue, task.request, ctx.rules) is not None:
            return False  # room on the node, but the queue may not take it even so
        state.assign(task, node, PIPELINED)
        return True
    return False


def _victim_options(
    ctx: CycleContext, gang: GangView, task: TaskView, mode: str, evicted: list[TaskView]
) -> Iterator[tuple[int, list[TaskView]]]:
    """(node, victims) to try in turn: Volcano's first node where priority-ordered victims make
    room, or, with preemptioncost, the one cheapest set over all nodes (evict_cost.py)."""
    run = ctx.preemption
    if run is None:
        for node in ctx.placer.static_fit(task).candidates:
            victims = _victims_on(ctx, gang, task, node, mode)
            if victims is not None:
                yield node, victims
        return
    eligible = partial(_eligible, ctx, gang, task, mode=mode)
    still_over = partial(_queue_still_over, ctx, gang, task)
    best = evict_cost.place_by_cost(ctx, run, gang, task, mode, evicted, eligible, still_over)
    if best is not None:
        yield best


@dataclass(slots=True)
class _Candidate:
    task: TaskView
    order: tuple[object, ...]


def _victims_on(
    ctx: CycleContext, gang: GangView, task: TaskView, node: int, mode: str
) -> list[TaskView] | None:
    """The victims (in eviction order) that make `task` fit on `node`, or None if none suffice."""
    state = ctx.state
    here = [v for v in state.tasks_on_node[node].values() if _eligible(ctx, gang, task, v, mode)]
    if not here:
        return None
    here.sort(key=lambda v: _victim_order(ctx, v))
    room = state.future_idle(node)
    # What the node lacks for the task: a victim holding none of it frees nothing useful (an H100
    # pod is not reclaimed for a pod that waits for an A100: reclaim by model).
    short = {i for i, amount in task.request if room[i] < amount}
    queue_freed = [0] * state.space.size  # for preempt: what victims give back to our queue
    chosen: dict[str, TaskView] = {}
    lost: dict[str, int] = {}  # victim gang uid -> tasks taken from it so far
    credit: dict[str, list[int]] = {}  # victim queue -> allocation taken from it (reclaim)
    for victim in here:
        if victim.info.uid in chosen:
            continue
        if short and not any(i in short and amount > 0 for i, amount in victim.request):
            continue
        victim_gang = victim.gang
        taken = lost.get(victim_gang.uid, 0)
        remaining = victim_gang.ready - taken - 1
        if remaining >= victim_gang.info.min_member or remaining == 0:
            batch = [victim]
        else:
            batch = [t for t in victim_gang.tasks if t.status in (BOUND, RUNNING)]
            batch = [t for t in batch if t.info.uid not in chosen]
            if not all(_eligible(ctx, gang, task, t, mode) for t in batch):
                continue  # the whole gang would have to go, and part of it may not
        if not ctx.disruption.allows([*chosen.values(), *batch], mode):
            continue  # pdb: a budget forbids it; other victims may do
        if mode == RECLAIM and not _queue_still_over(ctx, gang, task, victim_gang, batch, credit):
            continue
        for member in batch:
            chosen[member.info.uid] = member
            lost[victim_gang.uid] = lost.get(victim_gang.uid, 0) + 1
            if member.node == node:
                for i, amount in member.request:
                    room[i] += amount
            if mode == PREEMPT:
                for i, amount in member.request:
                    queue_freed[i] += amount
        if fits(room, task.request) and queue_room(ctx, gang, task.request, queue_freed):
            return list(chosen.values())
    return None


def _reclaim_judge(ctx: CycleContext) -> str | None:
    """The plugin that judges reclaim victims: the first of proportion, capacity and
    hierarchical drf in configuration order (Volcano lets the first deciding tier decide)."""
    for tier in ctx.conf.tiers:
        for option in tier.plugins:
            if not option.enabled("enableReclaimable"):
                continue
            if option.name in ("proportion", "capacity"):
                return option.name
            if option.name == "drf" and option.enabled("enableHierarchy"):
                return "drf"
    return None


def _queue_still_over(
    ctx: CycleContext,
    gang: GangView,
    task: TaskView,
    victim_gang: GangView,
    batch: list[TaskView],
    credit: dict[str, list[int]],
) -> bool:
    """reclaim takes from a queue only while it holds more than it deserves (and its guarantee),
    or, with hierarchical drf, while the reclaimer's queue would still come first."""
    queue = victim_gang.queue
    if queue is None:
        return True
    taken = credit.setdefault(queue.name, [0] * ctx.state.space.size)
    dims = fair_dims(ctx.state)
    allocated = [queue.alloc[i] - taken[i] for i in range(len(taken))]
    judge = _reclaim_judge(ctx)
    if judge == "proportion" and queue.deserved is not None:
        if all(allocated[i] <= queue.deserved[i] for i in dims):
            return False
    elif judge == "capacity":
        deserved = queue.deserved or queue.capability
        if all(allocated[i] <= deserved[i] for i in dims):
            return False
    elif judge == "drf" and ctx.state.hierarchy is not None:
        requests = [member.request for member in batch]
        if not ctx.state.hierarchy.reclaim_allowed(gang, task.request, victim_gang, requests):
            return False
    else:
        return False  # without proportion, capacity or hierarchical drf no queue is over its share
    after = list(allocated)
    for member in batch:
        for i, amount in member.request:
            after[i] -= amount
    if any(after[i] < queue.guarantee[i] for i in dims if queue.guarantee[i] > 0):
        return False
    for member in batch:
        for i, amount in member.request:
            taken[i] += amount
    return True


def _eligible(ctx: CycleContext, gang: GangView, task: TaskView, victim: TaskView, mode: str) -> bool:
    victim_gang = victim.gang
    if victim.status not in (BOUND, RUNNING) or not victim.info.preemptable:
        return False
    if victim_gang is gang or victim_gang.released or victim_gang.queue is None:
        return False
    if any(t.status in (ALLOCATED, PIPELINED) for t in victim_gang.tasks):
        return False  # a gang placed in this very cycle is not taken apart again
    if protected(ctx, victim):
        return False
    if ctx.preemption is not None and evict_cost.too_young_gang(ctx, ctx.preemption, victim_gang):
        return False  # preemptioncost's minRunningTime
    if task.best_effort and not victim.best_effort:
        return False
    if mode == PREEMPT:
        return (
            victim_gang.queue is gang.queue
            and ctx.conf.enabled("priority", "enablePreemptable")
            and victim_gang.info.priority < gang.info.priority
        )
    return victim_gang.queue is not gang.queue and victim_gang.queue.info.reclaimable


def _victim_order(ctx: CycleContext, victim: TaskView) -> tuple[object, ...]:
    """Least important first: with fairshare, the queue furthest over its fair share over time;
    then reverse job order, then reverse task order."""
    gang = victim.gang
    return (
        give_back_key(ctx.state.fair_keys, gang.queue),
        gang.info.priority,
        -seconds_of(gang.info.created),  # the younger gang first: reverse job order
        gang.uid,
        tuple(-x if isinstance(x, int) else x for x in victim.order[:2]),
        victim.info.name,
    )
