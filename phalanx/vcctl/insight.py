"""Shell: the facts `job why` and `queue why` explain, read without writing anything.

- PostgreSQL, in one READ ONLY transaction: the scheduler's own snapshot (the same reader its
  cycle uses) and its recorded verdict for the gang. Over that snapshot it runs the scheduler's
  pure core — `build_context` for each queue's allocated, admitted, deserved and capability, and
  `plan_cycle` as a dry run for the verdict the next cycle would give, with its node fit errors.
  Nothing is committed: the core returns plain data.
- The audit stream (NATS), for the gang's and the job's verdicts and phases over time.

Where to find them: PHALANX_DATABASE_URL / PHALANX_NATS_URL, else the stack `phalanx up` runs for
--state-dir; the scheduler configuration is the one its process was started with, else the
stored ConfigMap, else Volcano's default.
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nats
import orjson
from nats.js.api import ConsumerConfig, DeliverPolicy
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

from phalanx import stack as stacks
from phalanx.vcctl import explain
from services.scheduler import queue_usage
from services.scheduler.core import plan_cycle
from services.scheduler.core.build import build_context
from services.scheduler.core.config import load_conf
from services.scheduler.core.state import VALID_STATUSES, CycleState, GangView, QueueView
from services.scheduler.core.vectors import UNLIMITED
from services.scheduler.snapshot_reader import ShellMemory, read_snapshot
from shared.bus.credentials import connect_options
from shared.config import NatsSettings
from shared.messages import subjects
from shared.storage import tables

HISTORY_LIMIT = 20
_GROUP_OF_JOB = re.compile(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _job_name(group: str) -> str:
    """A Volcano Job's PodGroup is `<job>-<job uid>`: people know the job by its name."""
    return _GROUP_OF_JOB.sub("", group)


@dataclass(frozen=True)
class Endpoints:
    database_url: str | None
    nats_url: str | None
    scheduler_conf: str | None  # the text of the scheduler's configuration file, if it has one


def endpoints(state_dir: Path, database_url: str | None, nats_url: str | None) -> Endpoints:
    running = stacks.Stack.load(state_dir.resolve())
    conf_text = None
    if running is not None:
        database_url = database_url or running.database_url
        nats_url = nats_url or running.auditor_nats_url or running.nats_url
        scheduler = next((p for p in running.processes if p.name == "scheduler"), None)
        conf_file = scheduler.env.get("SCHEDULER_CONF_FILE") if scheduler else None
        if conf_file and Path(conf_file).exists():
            conf_text = Path(conf_file).read_text()
    conf_file = os.environ.get("SCHEDULER_CONF_FILE")
    if conf_text is None and conf_file and Path(conf_file).exists():
        conf_text = Path(conf_file).read_text()
    return Endpoints(database_url, nats_url, conf_text)


def _named(state: CycleState, vector: list[int] | None, *, limited_only: bool = False) -> explain.Amounts:
    if vector is None:
        return {}
    names = state.space.names
    return {
        names[i]: v
        for i, v in enumerate(vector)
        if names[i] != "pods" and v and not (limited_only and v >= UNLIMITED)
    }


def queue_facts(state: CycleState, queue: QueueView, share: float) -> explain.QueueFacts:
    deserved = _named(state, queue.deserved, limited_only=True) if queue.deserved is not None else None
    return explain.QueueFacts(
        name=queue.name,
        state=queue.info.state,
        weight=queue.info.weight,
        capability=_named(state, queue.capability, limited_only=True),
        allocated=_named(state, queue.alloc),
        admitted=_named(state, queue.inqueue),
        deserved=deserved,
        share=share,
        guarantee=_named(state, queue.guarantee),
        real_capability=_named(state, queue.real_capability, limited_only=True),
    )


def _gang_facts(state: CycleState, gang: GangView) -> explain.GangFacts:
    waiting = [t for t in gang.tasks if t.status == "Pending"]
    missing = max(0, gang.info.min_member - gang.ready)
    need: dict[str, int] = {}
    if waiting:
        for task in waiting[:missing]:
            for name, v in task.info.request.items():
                need[name] = need.get(name, 0) + v
    elif gang.info.min_resources is not None:
        need = {n: max(0, v - gang.alloc[state.space.index[n]]) for n, v in gang.info.min_resources.items()}
    need.pop("pods", None)
    request = dict(waiting[0].info.request) if waiting else {}
    request.pop("pods", None)
    return explain.GangFacts(
        namespace=gang.info.namespace,
        name=gang.info.name,
        queue=gang.info.queue,
        phase=gang.phase,
        priority=gang.info.priority,
        min_member=gang.info.min_member,
        placed=gang.ready,
        valid=sum(1 for t in gang.tasks if t.status in VALID_STATUSES)
        if gang.tasks
        else gang.info.min_member,
        need=need,
        task_request=request,
        created=gang.info.created,
    )


@dataclass(frozen=True)
class SchedulerView:
    gang: explain.GangFacts | None
    queue: explain.QueueFacts | None
    queues: tuple[explain.QueueFacts, ...]
    ahead: tuple[explain.Ahead, ...]
    dry_run: explain.Verdict | None
    recorded: explain.Verdict | None
    nodes_total: int
    nodes_could_hold: int


def _view(
    state: CycleState, gang: GangView | None
) -> tuple[explain.GangFacts | None, tuple[explain.Ahead, ...], int]:
    if gang is None:
        return None, (), 0
    facts = _gang_facts(state, gang)
    ahead = tuple(
        explain.Ahead(
            g.info.namespace, _job_name(g.info.name), g.info.priority, g.phase, _named(state, g.alloc)
        )
        for g in sorted(state.gangs, key=lambda g: (-g.info.priority, g.info.created))
        if g is not gang and g.info.queue == gang.info.queue and g.info.priority > gang.info.priority
    )
    fits = sum(
        1
        for node in state.nodes
        if all(node.allocatable.get(n, 0) >= v for n, v in facts.task_request.items())
    )
    return facts, ahead, fits


async def _read_scheduler(
    session: AsyncSession, namespace: str, group: str | None, conf_text: str | None
) -> SchedulerView:
    from services.scheduler.core.fairness import fair_dims, queue_share

    now = datetime.now(UTC)
    read = await read_snapshot(session, now=now, expire_before=None, memory=ShellMemory())
    conf = load_conf(conf_text or read.conf_text).conf
    # Every gang walked: an explanation names the gangs ahead, which the scheduler's settled
    # sums (core/settled.py, a cycle's shortcut) would hide.
    snapshot = replace(read.snapshot, settled=None)
    if conf.enabled("fairshare"):  # usage over time orders queues and may shape deserved shares
        snapshot = replace(snapshot, queue_usage=await queue_usage.load(session))
    ctx, _ = build_context(snapshot, conf)
    state = ctx.state
    dims = fair_dims(state)
    queues = tuple(
        queue_facts(state, q, queue_share(q, dims))
        for q in sorted(state.queues.values(), key=lambda q: q.name)
    )
    if group is None:
        return SchedulerView(None, None, queues, (), None, None, len(state.nodes), 0)
    gang = next((g for g in state.gangs if (g.info.namespace, g.info.name) == (namespace, group)), None)
    facts, ahead, fits = _view(state, gang)
    planned = plan_cycle(snapshot, conf).verdict_by_job(namespace, group)
    dry_run = (
        explain.Verdict(planned.reason, planned.message, None, planned.fit_errors, planned.detail)
        if planned is not None
        else None
    )
    row = (
        await session.execute(
            select(tables.GangVerdictRow).where(
                tables.GangVerdictRow.namespace == namespace, tables.GangVerdictRow.name == group
            )
        )
    ).scalar_one_or_none()
    recorded = explain.Verdict(row.reason, row.message, row.updated_at) if row is not None else None
    queue = next((q for q in queues if gang is not None and q.name == gang.info.queue), None)
    return SchedulerView(facts, queue, queues, ahead, dry_run, recorded, len(state.nodes), fits)


async def read_scheduler(
    database_url: str, namespace: str, group: str | None, conf_text: str | None
) -> SchedulerView:
    engine = create_async_engine(database_url, pool_size=1)
    try:
        async with AsyncSession(engine) as session, session.begin():
            return await _read_scheduler(session, namespace, group, conf_text)
    finally:
        await engine.dispose()


async def read_history(
    nats_url: str, keys: list[tuple[str, str, str]]
) -> list[tuple[datetime | None, str, str]]:
    """The audit events of (service, namespace, name) keys, oldest first: what happened when."""
    # As the read-only auditor, replies come to the auditor's own inbox prefix (connect_options).
    settings = NatsSettings(url=nats_url, tls_ca_file=os.environ.get("PHALANX_NATS_TLS_CA_FILE"))
    connection = await nats.connect(**connect_options(settings), connect_timeout=3, max_reconnect_attempts=0)
    found: list[tuple[datetime | None, str, str]] = []
    try:
        js = connection.jetstream()
        for service, namespace, name in keys:
            subject = subjects.audit(service, "X", namespace, name).replace(".X.", ".*.", 1)
            subscription = await js.subscribe(
                subject, ordered_consumer=True, config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL)
            )
            while True:
                try:
                    message = await subscription.next_msg(timeout=0.5)
                except (TimeoutError, nats.errors.TimeoutError):
                    break
                document = orjson.loads(message.data)
                data = document.get("data") or {}
                when = (
                    datetime.fromisoformat(str(document.get("time")).replace("Z", "+00:00"))
                    if document.get("time")
                    else None
                )
                found.append((when, f"{data.get('service')}.{data.get('action')}", _what_changed(data)))
            await subscription.unsubscribe()
    finally:
        await connection.close()
    found.sort(key=lambda item: item[0] or datetime.min.replace(tzinfo=UTC))
    return found[-HISTORY_LIMIT:]


def _what_changed(data: dict[str, Any]) -> str:
    """One audit event in a few words: a phase from -> to, where pods went, or the verdict."""
    details = data.get("details") or {}
    words = []
    if details.get("phase"):
        words.append(f"{details.get('previous') or 'new'} -> {details['phase']}")
    if isinstance(details.get("pods"), dict):
        words.append(", ".join(f"{pod} on {node}" for pod, node in sorted(details["pods"].items())))
    elif details.get("pods"):
        words.append(", ".join(map(str, details["pods"])))
    if details.get("queue"):
        words.append(f"queue {details['queue']}")
    words += [str(data[k]) for k in ("reason", "message") if data.get(k)]
    return "  ".join(words) or str(data.get("outcome", ""))


def run(coroutine: object) -> object:
    return asyncio.run(coroutine)  # type: ignore[arg-type]


async def _read_waiting(
    session: AsyncSession, queue: str, conf_text: str | None
) -> tuple[explain.QueueFacts | None, list[tuple[str, str, str, str]]]:
    view = await _read_scheduler(session, "", None, conf_text)
    facts = next((q for q in view.queues if q.name == queue), None)
    verdict, group = tables.GangVerdictRow, tables.PodGroup
    rows = (
        await session.execute(
            select(verdict.namespace, verdict.name, verdict.reason, verdict.message)
            .join(group, group.uid == verdict.gang_uid)  # a deleted gang's last verdict stays behind
            .where(verdict.queue == queue, group.deleted.is_(False), group.phase != "Completed")
            .order_by(verdict.updated_at)
        )
    ).all()
    return facts, [(ns, _job_name(name), reason, message) for ns, name, reason, message in rows]


async def read_waiting(
    database_url: str, queue: str, conf_text: str | None
) -> tuple[explain.QueueFacts | None, list[tuple[str, str, str, str]]]:
    """The queue's numbers as the scheduler computes them, and the gangs that wait in it."""
    engine = create_async_engine(database_url, pool_size=1)
    try:
        async with AsyncSession(engine) as session, session.begin():
            return await _read_waiting(session, queue, conf_text)
    finally:
        await engine.dispose()
