"""Victim choice for preempt and reclaim under the preemptioncost plugin.

actions/evict.py calls `place_by_cost` instead of its first-node, priority-ordered search when
`preemptioncost` is configured (core/preemption_cost.py holds the cost and the budgets). For one
pending task of a starving gang it tries every candidate node: on each, whole victim gangs are
taken cheapest first until the task fits, then any gang the task turns out not to need is given
back (most costly first), so the set is as small and as cheap as the greedy order finds. The
node whose set costs least wins; the other nodes' sets are kept as the alternatives considered,
for the audit stream and `phalanx job why`. A set that would overrun an eviction budget is not
taken: the gang waits, and its verdict says which budget held it back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from services.scheduler.core.context import CycleContext
from services.scheduler.core.plan import PREEMPT, PreemptionNote, VictimCost
from services.scheduler.core.preemption_cost import (
    GangCost,
    PodHeld,
    PreemptionRun,
    gang_cost,
    held,
    too_young,
)
from services.scheduler.core.snapshot import BOUND, RUNNING
from services.scheduler.core.state import GangView, TaskView
from services.scheduler.core.vectors import fits_with, over_limit

Eligible = Callable[[TaskView], bool]
StillOver = Callable[[GangView, list[TaskView], dict[str, list[int]]], bool]


@dataclass(slots=True)
class _Option:
    node: int
    victims: list[TaskView]
    gangs: list[GangView]
    cost: float


def pods_of(gang: GangView) -> list[TaskView]:
    return [t for t in gang.tasks if t.status in (BOUND, RUNNING)]


def pods_held(ctx: CycleContext, gang: GangView) -> list[PodHeld]:
    """The gang's running pods as the cost sees them."""
    names = ctx.state.space.names
    return [held({names[i]: a for i, a in t.request}, t.info.started) for t in pods_of(gang)]


def too_young_gang(ctx: CycleContext, run: PreemptionRun, gang: GangView) -> bool:
    """minRunningTime: the gang has not run long enough to be a victim."""
    return too_young(pods_held(ctx, gang), gang.info.created, ctx.now, run.args)


def cost_of(ctx: CycleContext, run: PreemptionRun, gang: GangView) -> GangCost:
    known = run.costs.get(gang.uid)
    if known is None:
        pods = pods_held(ctx, gang)
        known = run.costs[gang.uid] = gang_cost(
            gang.info.annotations, pods, gang.info.created, ctx.now, run.args
        )
    return known


def place_by_cost(
    ctx: CycleContext,
    run: PreemptionRun,
    gang: GangView,
    task: TaskView,
    mode: str,
    trial: list[TaskView],
    eligible: Eligible,
    still_over: StillOver,
) -> tuple[int, list[TaskView]] | None:
    """The node and the cheapest victims (whole gangs) that let `task` fit there, or None.
    `trial`: the victims this gang's trial has already taken (they count against the budgets)."""
    options: list[_Option] = []
    for node in ctx.placer.static_fit(task).candidates:
        option = _cheapest_on(ctx, run, gang, task, node, mode, eligible, still_over)
        if option is not None:
            options.append(option)
    if not options:
        return None
    options.sort(key=lambda o: (o.cost, len(o.victims), o.node))
    # The cheapest set the budgets allow (reclaim's sets may come from different queues).
    refusals = []
    for option in options:
        refused = _over_budget(ctx, run, [*trial, *option.victims])
        if refused is None:
            _note(ctx, run, gang, option, [o for o in options if o is not option][:3])
            return option.node, option.victims
        refusals.append(refused)
    held_back = refusals[0]  # what holds back the cheapest set
    gang.block_reason = "PreemptionBudget"
    gang.job_fit_error = f"preemption waits: {held_back}"
    return None


def _cheapest_on(
    ctx: CycleContext,
    run: PreemptionRun,
    gang: GangView,
    task: TaskView,
    node: int,
    mode: str,
    eligible: Eligible,
    still_over: StillOver,
) -> _Option | None:
    state = ctx.state
    here = {v.gang.uid: v.gang for v in state.tasks_on_node[node].values() if eligible(v)}
    candidates = sorted(here.values(), key=lambda g: (cost_of(ctx, run, g).cost, g.uid))
    credit: dict[str, list[int]] = {}
    chosen: list[GangView] = []
    for victim_gang in candidates:
        batch = pods_of(victim_gang)
        if not all(eligible(t) for t in batch):
            continue  # the whole gang would have to go, and part of it may not
        if not ctx.disruption.allows([t for g in chosen for t in pods_of(g)] + batch, mode):
            continue  # pdb
        if mode != PREEMPT and not still_over(victim_gang, batch, credit):
            continue
        chosen.append(victim_gang)
        if _fits(ctx, gang, task, node, chosen, mode):
            break
    else:
        return None
    for victim_gang in sorted(chosen, key=lambda g: -cost_of(ctx, run, g).cost):
        rest = [g for g in chosen if g is not victim_gang]
        if rest and _fits(ctx, gang, task, node, rest, mode):
            chosen = rest  # not needed: give it back
    return _Option(
        node=node,
        victims=[t for g in chosen for t in pods_of(g)],
        gangs=chosen,
        cost=sum(cost_of(ctx, run, g).cost for g in chosen),
    )


def _fits(
    ctx: CycleContext, gang: GangView, task: TaskView, node: int, chosen: list[GangView], mode: str
) -> bool:
    state = ctx.state
    room = state.future_idle(node)
    freed = [0] * state.space.size
    for victim_gang in chosen:
        for member in pods_of(victim_gang):
            for i, amount in member.request:
                if member.node == node:
                    room[i] += amount
                if mode == PREEMPT:
                    freed[i] += amount
    if not fits_with(task.request, room, [0] * len(room)):
        return False
    queue = gang.queue
    assert queue is not None
    for level in (queue, *queue.ancestors):
        used = [a - f for a, f in zip(level.alloc, freed, strict=True)]
        if over_limit(used, task.request, level.capability) is not None:
            return False
    return True


def _over_budget(ctx: CycleContext, run: PreemptionRun, victims: list[TaskView]) -> str | None:
    wanted = dict(run.spent)
    for victim in victims:
        queue = victim.gang.queue
        name = queue.info.name if queue is not None else ""
        wanted[name] = wanted.get(name, 0) + 1
    return run.left.allows(wanted)


def spend(run: PreemptionRun, victims: list[TaskView]) -> None:
    """A committed trial's victims count against their queues' budgets for the rest of the cycle."""
    for victim in victims:
        queue = victim.gang.queue
        name = queue.info.name if queue is not None else ""
        run.spent[name] = run.spent.get(name, 0) + 1


def _note(
    ctx: CycleContext, run: PreemptionRun, gang: GangView, best: _Option, others: list[_Option]
) -> None:
    nodes = ctx.state.nodes

    def victims(option: _Option) -> tuple[VictimCost, ...]:
        return tuple(
            VictimCost(
                gang_uid=g.uid,
                job=f"{g.info.namespace}/{g.info.name}",
                cost=round(cost_of(ctx, run, g).cost, 4),
                detail=cost_of(ctx, run, g).describe(),
            )
            for g in option.gangs
        )

    chosen = victims(best)
    lines = [
        f"evicts {', '.join(v.job for v in chosen)} on {nodes[best.node].name} (total cost {best.cost:.2f})"
    ]
    lines += [
        f"instead of {', '.join(v.job for v in victims(o))} on {nodes[o.node].name}: costs {o.cost:.2f}"
        for o in others
    ]
    run.notes.append(
        PreemptionNote(
            gang_uid=gang.uid,
            namespace=gang.info.namespace,
            name=gang.info.name,
            node=nodes[best.node].name,
            victims=chosen,
            cost=round(best.cost, 4),
            alternatives=tuple((nodes[o.node].name, victims(o), round(o.cost, 4)) for o in others),
            message="; ".join(lines),
        )
    )
