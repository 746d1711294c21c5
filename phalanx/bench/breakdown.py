"""Where a run's writes went: PostgreSQL rows per table and NATS messages per kind of subject.

Read beside the totals of probes.py, before and after the measured load, so a results file says
which table and which subject a per-pod cost comes from (issue #15 asks for the fewest messages
and rows per pod; a total alone does not say which to cut). Messages are counted by a plain NATS
subscriber on the streams' subjects while the load runs: JetStream delivers every stored message
to core subscribers too, and a subject's kind is its leading tokens (`cluster.pod`,
`audit.scheduler.placed`, `jobs.phase`), a decision's its CloudEvent type.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import nats
from nats.aio.client import Client
from nats.aio.msg import Msg
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from shared.messages import subjects

# How many leading tokens name a subject's kind, per stream prefix (the rest is the object key).
_KIND_TOKENS = {"cluster": 2, "jobs": 2, "audit": 3, "deadletter": 2}


@dataclass
class Breakdown:
    """Rows written per table and messages per subject kind over the measured load."""

    rows: dict[str, int] = field(default_factory=dict)
    messages: dict[str, int] = field(default_factory=dict)


async def rows_by_table(database_url: str) -> dict[str, int]:
    """Rows inserted, updated or deleted so far in each table of the stack's database."""
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            await connection.execute(text("SELECT pg_stat_clear_snapshot()"))
            result = await connection.execute(
                text("SELECT relname, n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_user_tables")
            )
            return {str(name): int(count) for name, count in result}
    finally:
        await engine.dispose()


def subject_kind(subject: str, payload: bytes) -> str:
    """`cluster.pod`, `audit.scheduler.placed`, `decisions <type>`: what a message is about."""
    tokens = subject.split(".")
    if tokens[0] == "decisions":
        try:
            kind = str(json.loads(payload).get("type", "?"))
        except (ValueError, AttributeError):
            kind = "?"
        return f"decisions {'.'.join(kind.split('.')[2:-1]) or kind}"
    return ".".join(tokens[: _KIND_TOKENS.get(tokens[0], 1)])


class SubjectTally:
    """Counts the messages published on the streams' subjects while it runs."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._client: Client | None = None

    async def start(self, nats_url: str) -> None:
        self._client = await nats.connect(nats_url.split(","))
        for pattern in subjects.STREAM_SUBJECTS.values():
            await self._client.subscribe(pattern, cb=self._count, pending_msgs_limit=0, pending_bytes_limit=0)

    async def _count(self, message: Msg) -> None:
        self.counts[subject_kind(message.subject, message.data)] += 1

    async def stop(self) -> dict[str, int]:
        if self._client is not None:
            await self._client.flush()
            await self._client.close()
        return dict(self.counts)


def minus(after: Mapping[str, int], before: Mapping[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}


def report_lines(breakdown: Breakdown, pods: int) -> list[str]:
    """Two tables for the results file, largest first, with the per-pod figure."""
    lines: list[str] = []
    for title, counts in (("PostgreSQL table", breakdown.rows), ("NATS subject", breakdown.messages)):
        if not counts:
            continue
        lines += [f"| {title} | written | per pod |", "|---|---|---|"]
        for key, count in sorted(counts.items(), key=lambda kv: -kv[1]):
            lines.append(f"| {key} | {count} | {count / max(pods, 1):.2f} |")
        lines.append("")
    return lines
