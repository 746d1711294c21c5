"""Shell: what the console shows from PostgreSQL, read as `phalanx_reader`: queues, jobs, pods, nodes,
verdicts, and each queue's share over the last hours (sampled by the scheduler into
queue_share_history). Plain queries into the plain rows of page_rows.py, which pages.py renders.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from services.console.page_rows import (
    JobDetail,
    JobRow,
    NodeView,
    PodRow,
    QueueSummary,
    Verdict,
    add_into,
    roll_up,
)

# Pods on a node that hold its resources (a bound pod not yet running holds them too).
_HOLDING = "p.node_name IS NOT NULL AND NOT p.deleted AND p.phase IN ('Pending', 'Running')"
WAITING_GANG_PHASES = ("Pending", "Inqueue")


class ReadModel:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def _rows(self, sql: str, **params: Any) -> list[Any]:
        async with self.engine.connect() as connection:
            return list((await connection.execute(text(sql), params)).mappings())

    async def ping(self) -> None:
        await self._rows("SELECT 1")

    async def queues(self) -> list[QueueSummary]:
        queues = {
            row["name"]: QueueSummary(
                row["name"],
                row["parent"],
                row["weight"],
                row["state"],
                row["capability"] or {},
                row["deserved"] or {},
                row["guarantee"] or {},
            )
            for row in await self._rows("SELECT * FROM queues WHERE NOT deleted ORDER BY name")
        }
        for row in await self._rows(
            "SELECT g.queue, p.request FROM pods p JOIN pod_groups g"
            " ON g.namespace = p.namespace AND g.name = p.group_name AND NOT g.deleted"
            f" WHERE {_HOLDING}"
        ):
            if row["queue"] in queues:
                add_into(queues[row["queue"]].allocated, row["request"])
        for row in await self._rows(
            "SELECT queue, phase, count(*) AS n FROM pod_groups WHERE NOT deleted GROUP BY queue, phase"
        ):
            queue = queues.get(row["queue"])
            if queue is None:
                continue
            if row["phase"] in WAITING_GANG_PHASES:
                queue.pending_gangs += row["n"]
            elif row["phase"] == "Running":
                queue.running_gangs += row["n"]
        return roll_up(queues)

    async def share_history(self, hours: float) -> dict[str, list[tuple[datetime, float]]]:
        """Each queue's share samples of the last `hours`, oldest first (queue_share_history)."""
        history: dict[str, list[tuple[datetime, float]]] = {}
        for row in await self._rows(
            "SELECT queue, sampled_at, share FROM queue_share_history"
            " WHERE sampled_at >= now() - make_interval(secs => :seconds) ORDER BY queue, sampled_at",
            seconds=hours * 3600,
        ):
            history.setdefault(row["queue"], []).append((row["sampled_at"], float(row["share"])))
        return history

    async def jobs(
        self,
        *,
        namespace: str | None = None,
        queue: str | None = None,
        phase: str | None = None,
        since: datetime | None = None,
    ) -> list[JobRow]:
        rows = await self._rows(
            "SELECT j.uid, j.namespace, j.name, j.phase, j.updated_at,"
            " coalesce(g.queue, j.state->'spec'->>'queue', 'default') AS queue,"
            " coalesce(g.min_member, 0) AS min_member, g.created_at"
            " FROM jobs j LEFT JOIN pod_groups g ON g.namespace = j.namespace"
            " AND g.name = j.name || '-' || j.uid AND NOT g.deleted"
            " WHERE (CAST(:namespace AS text) IS NULL OR j.namespace = :namespace)"
            " AND (CAST(:phase AS text) IS NULL OR j.phase = :phase)"
            " AND (CAST(:since AS timestamptz) IS NULL OR coalesce(g.created_at, j.updated_at) >= :since)"
            " ORDER BY coalesce(g.created_at, j.updated_at) DESC, j.namespace, j.name LIMIT 500",
            namespace=namespace,
            phase=phase,
            since=since,
        )
        jobs = [_job(row) for row in rows]
        return [job for job in jobs if queue is None or job.queue == queue]

    async def job(self, namespace: str, name: str) -> JobDetail | None:
        rows = await self._rows(
            "SELECT j.uid, j.namespace, j.name, j.phase, j.updated_at,"
            " coalesce(g.queue, 'default') AS queue, coalesce(g.min_member, 0) AS min_member,"
            " g.created_at, g.uid AS group_uid, g.phase AS group_phase"
            " FROM jobs j LEFT JOIN pod_groups g ON g.namespace = j.namespace"
            " AND g.name = j.name || '-' || j.uid AND NOT g.deleted"
            " WHERE j.namespace = :namespace AND j.name = :name",
            namespace=namespace,
            name=name,
        )
        if not rows:
            return None
        row = rows[0]
        job = _job(row)
        pods = [
            PodRow(p["name"], p["task_role"], p["phase"], p["node_name"])
            for p in await self._rows(
                "SELECT name, task_role, phase, node_name FROM pods"
                " WHERE namespace = :namespace AND group_name = :group AND NOT deleted ORDER BY name",
                namespace=namespace,
                group=job.podgroup,
            )
        ]
        verdict = None
        if row["group_uid"]:
            found = await self._rows(
                "SELECT reason, condition_reason, message, updated_at FROM gang_verdicts"
                " WHERE gang_uid = :uid",
                uid=row["group_uid"],
            )
            if found:
                v = found[0]
                verdict = Verdict(v["reason"], v["condition_reason"], v["message"], v["updated_at"])
        return JobDetail(job, row["group_uid"], row["group_phase"], pods, verdict)

    async def namespaces_and_phases(self) -> tuple[list[str], list[str]]:
        rows = await self._rows("SELECT DISTINCT namespace, phase FROM jobs")
        return sorted({r["namespace"] for r in rows}), sorted({r["phase"] for r in rows})

    async def nodes(self) -> list[NodeView]:
        nodes = {
            row["name"]: NodeView(
                row["name"], dict(row["allocatable"] or {}), {}, row["unschedulable"], row["ready"]
            )
            for row in await self._rows("SELECT * FROM nodes WHERE NOT deleted ORDER BY name")
        }
        for row in await self._rows(f"SELECT p.node_name, p.request FROM pods p WHERE {_HOLDING}"):
            if row["node_name"] in nodes:
                add_into(nodes[row["node_name"]].used, row["request"])
        return list(nodes.values())

    async def pods_by_node(self) -> Counter[str]:
        rows = await self._rows(f"SELECT p.node_name, count(*) AS n FROM pods p WHERE {_HOLDING} GROUP BY 1")
        return Counter({r["node_name"]: r["n"] for r in rows})


def _job(row: Any) -> JobRow:
    return JobRow(
        row["uid"],
        row["namespace"],
        row["name"],
        row["phase"],
        row["queue"],
        row["min_member"],
        row["created_at"],
        row["updated_at"],
        f"{row['name']}-{row['uid']}",
    )
