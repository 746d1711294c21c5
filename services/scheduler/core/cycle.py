"""One scheduling cycle as a pure function: `plan_cycle(snapshot, conf) -> CyclePlan`.

The scheduler shell calls it once per period with a snapshot read from PostgreSQL. It builds the
working state (build.py), applies the optional below-minimum release rule, runs the configured
actions in order (enqueue, allocate, backfill, preempt, reclaim), and turns the final state into
decisions: binds grouped per gang (only for gangs that are ready), evictions, nominations, and a
verdict for every gang left unplaced. Same snapshot and configuration, same plan.
"""

from __future__ import annotations

from collections.abc import Callable

from services.scheduler.core.actions.allocate import allocate, backfill
from services.scheduler.core.actions.enqueue import enqueue
from services.scheduler.core.actions.evict import preempt, reclaim
from services.scheduler.core.build import build_context
from services.scheduler.core.config import DEFAULT_CONF, SchedulerConf
from services.scheduler.core.context import CycleContext
from services.scheduler.core.figures import queue_figures
from services.scheduler.core.plan import (
    GANG_RELEASE,
    Bind,
    CyclePlan,
    Eviction,
    GangBinds,
    GangVerdict,
    Nomination,
)
from services.scheduler.core.snapshot import ALLOCATED, BOUND, PIPELINED, RUNNING, Snapshot
from services.scheduler.core.state import GangView
from services.scheduler.core.unschedulable_wording import verdict

_ACTIONS: dict[str, Callable[[CycleContext], None]] = {
    "enqueue": enqueue,
    "allocate": allocate,
    "backfill": backfill,
    "preempt": preempt,
    "reclaim": reclaim,
}


def plan_cycle(snapshot: Snapshot, conf: SchedulerConf = DEFAULT_CONF) -> CyclePlan:
    """Decide one cycle: which gangs to admit, bind, evict for, and why the others wait."""
    ctx, carried = build_context(snapshot, conf)
    released = _release_underfilled(ctx, snapshot)
    for name in conf.actions:
        if name == "allocate" and "enqueue" not in conf.actions:
            enqueue(ctx)  # Volcano's allocate admits Pending gangs itself when enqueue is absent
        _ACTIONS[name](ctx)
    return CyclePlan(
        enqueued=tuple(ctx.enqueued),
        binds=_binds(ctx),
        evictions=tuple(released + ctx.evictions),
        verdicts=_verdicts(ctx),
        released=tuple(g.uid for g in ctx.state.gangs if g.released),
        nominations=_nominations(ctx, carried),
        underfilled=tuple(
            g.uid for g in ctx.state.gangs if not g.released and _holds(g) and not g.is_ready()
        ),
        queues=queue_figures(ctx),
    )


def _holds(gang: GangView) -> bool:
    return any(t.status in (BOUND, RUNNING) for t in gang.tasks)


def _release_underfilled(ctx: CycleContext, snapshot: Snapshot) -> list[Eviction]:
    """Optional (gang argument releaseBelowMinAfterSeconds): free gangs stuck below minimum."""
    after = ctx.conf.argument("gang", "releaseBelowMinAfterSeconds", 0)
    if after <= 0:
        return []
    evictions: list[Eviction] = []
    for gang in ctx.state.gangs:
        since = gang.info.below_min_since
        if since is None or not _holds(gang) or gang.is_ready():
            continue
        if (snapshot.now - since).total_seconds() < after:
            continue
        gang.released = True
        for task in gang.tasks:
            if task.status in (BOUND, RUNNING):
                node = task.info.node or ""
                if task.node >= 0:
                    ctx.state.evict(task)
                evictions.append(
                    Eviction(task.info.uid, task.info.namespace, task.info.name, node, GANG_RELEASE)
                )
    return evictions


def _binds(ctx: CycleContext) -> tuple[GangBinds, ...]:
    result = []
    for gang in ctx.state.gangs:
        if not gang.is_ready():
            continue
        binds = tuple(
            Bind(t.info.uid, t.info.namespace, t.info.name, ctx.state.nodes[t.node].name)
            for t in gang.tasks
            if t.status == ALLOCATED
        )
        if binds:
            result.append(GangBinds(gang.uid, binds))
    return tuple(result)


def _nominations(ctx: CycleContext, carried: set[str]) -> tuple[Nomination, ...]:
    state = ctx.state
    result = []
    for gang in state.gangs:
        ready = gang.is_ready()
        for task in gang.tasks:
            waiting = task.status == PIPELINED or (task.status == ALLOCATED and not ready)
            if not waiting:
                continue
            # A carried reservation lasts while its evictions are pending; then it lapses.
            if task.info.uid in carried and not any(state.releasing[task.node]):
                continue
            result.append(Nomination(task.info.uid, gang.uid, state.nodes[task.node].name))
    return tuple(result)


def _verdicts(ctx: CycleContext) -> tuple[GangVerdict, ...]:
    result = []
    for gang in ctx.state.gangs:
        if gang.is_ready() and not gang.released:
            continue
        if not gang.tasks and gang.enqueue_reason is None:
            continue  # an admitted gang whose pods are not created yet: nothing to explain
        if gang.released:
            result.append(verdict(gang, "GangReleased"))
        elif gang.uid in ctx.invalid:
            condition, message = ctx.invalid[gang.uid]
            gang.job_fit_error = message
            result.append(verdict(gang, condition, condition))
        else:
            reason = gang.enqueue_reason or gang.block_reason or "NotEnoughResources"
            result.append(verdict(gang, reason))
    return tuple(result)
