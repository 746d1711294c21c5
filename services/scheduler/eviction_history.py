"""Shell: the evictions of the last budget window, for preemptioncost's budgets.

Read by the cycle loop only while `preemptioncost` is configured (docs/preemption.md): the
decisions of kind evict written within `budgetWindow` before the cycle's time, each with the
queue of the gang it took a pod from, laid onto the snapshot as `recent_evictions`. The pure
`budget_left` (core/preemption_cost.py) turns them into what each budget still allows. Every
evict decision counts, whatever became of it (pending, confirmed or expired) and whatever its
reason: a budget may then be stricter than it needs to be, never looser.
"""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.scheduler.core.config import SchedulerConf
from services.scheduler.core.preemption_cost import PLUGIN, args_of
from services.scheduler.core.snapshot import Snapshot
from shared.storage import tables


async def with_recent_evictions(
    sessions: async_sessionmaker[AsyncSession], snapshot: Snapshot, conf: SchedulerConf
) -> Snapshot:
    """The snapshot with the window's evictions, or unchanged without the plugin."""
    option = conf.plugin(PLUGIN)
    if option is None:
        return snapshot
    since = snapshot.now - args_of(option.arguments).window
    decision, group = tables.Decision, tables.PodGroup
    query = (
        select(group.queue, decision.created_at)
        .join(group, group.uid == decision.gang_uid)
        .where(decision.kind == "evict", decision.created_at > since)
        .order_by(decision.created_at)
    )
    async with sessions() as session, session.begin():
        rows = (await session.execute(query)).all()
    return replace(snapshot, recent_evictions=tuple((queue, at) for queue, at in rows))
