"""One scheduling cycle as a pure function: `plan_cycle(snapshot, conf) -> CyclePlan`.

The scheduler shell calls it once per period with a snapshot read from PostgreSQL. It builds the
working state (build.py), applies the optional below-minimum release rule, runs the configured
actions in order (enqueue, allocate, backfill, preempt, reclaim), and turns the final state into
decisions: binds grouped per gang (only for gangs that are ready), evictions, nominations, and a
verdict for every gang left unplaced. Same snapshot and configuration, same plan.
"""

from __future__ import annotations

from collections.abc import Callable

from services.scheduler.core import reservation
from services.scheduler.core.actions.allocate import allocate, backfill
from services.scheduler.core.actions.enqueue import enqueue
from services.scheduler.core.actions.evict import preempt, reclaim
from services.scheduler.core.build import build_context
from services.scheduler.core.config import DEFAULT_CONF, SchedulerConf
from services.scheduler.core.context import CycleContext
from services.scheduler.core.figures import queue_figures
from services.scheduler.core.node_base import NodeBase
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


def plan_cycle(
    snapshot: Snapshot, conf: SchedulerConf = DEFAULT_CONF, kept: NodeBase | None = None
) -> CyclePlan:
    """Decide one cycle: which gangs to admit, bind, evict for, and why the others wait.
    `kept`: the previous plan's `node_base`, reused when this snapshot has the same nodes (the
    plan is the same either way; tests/unit/scheduler/test_node_base.py)."""
    ctx, carried = build_context(snapshot, conf, kept)
    released = _release_underfilled(ctx, snapshot)
    ctx.reservations = reservation.book_for(snapshot, conf, ctx.state)
    for name in conf.actions:
        if name == "allocate" and "enqueue" not in conf.actions:
            enqueue(ctx)  # Volcano's allocate admits Pending gangs itself when enqueue is absent
        _ACTIONS[name](ctx)
    predictions = reservation.predict(ctx.reservations, ctx.state, ctx.placer) if ctx.reservations else ()
    return CyclePlan(
        enqueued=tuple(ctx.enqueued),
        binds=_binds(ctx),
        evictions=tuple(released + ctx.evictions),
        verdicts=reservation.with_predictions(_verdicts(ctx), predictions),
        released=tuple(g.uid for g in ctx.state.gangs if g.released),
        nominations=_nominations(ctx, carried),
        underfilled=tuple(
            g.uid for g in ctx.state.gangs if not g.released and _holds(g) and not g.is_ready()
        ),
        queues=queue_figures(ctx),
        predictions=predictions,
        queue_usage=ctx.state.queue_usage,
        preemptions=tuple(ctx.preemption.notes) if ctx.preemption is not None else (),
        node_base=ctx.state.base,
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
            Bind(
                t.info.uid,
                t.info.namespace,
                t.info.name,
                ctx.state.nodes[t.node].name,
                ctx.state.device_results.get(t.info.uid, ()),
            )
            for t in gang.tasks
            if t.status == ALLOCATED
        )
        if binds:
            result.append(GangBinds(gang.uid, binds, gang.domain))
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
