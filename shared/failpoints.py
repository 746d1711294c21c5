"""Named failpoints for fault tests (../shared/reference/reliability.md §6.0); off unless asked for.

A service reads `PHALANX_FAILPOINTS` once, e.g.
`PHALANX_FAILPOINTS="ctl.mid_bind_batch=crash:1,sched.after_decide_commit=sleep(2):3"`: at the
named point, `crash` kills the process at once (SIGKILL: no cleanup, as a machine failure would),
`sleep(S)` pauses S seconds, `error` raises `FailpointError`; the optional `:N` fires it the first
N times only (every time without it). With the variable unset, `hit` costs one dictionary lookup.

Points: `sched.inside_fenced_commit` (the leader row fenced, the decisions not yet written; an
idle cycle's fence too),
`sched.after_decide_commit` (decisions committed, not yet published),
`sched.after_ingest_batch` (a batch of cluster events ingested; a sleep here is a lagging ingest),
`relay.after_publish_before_mark` (outbox published, not yet marked sent),
`ctl.mid_bind_batch` (before each bind of a gang but its first), `ctl.after_pod_create_before_status` (a job's
pods created, its status not yet written), `ctl.after_ssh_secret_create` (the ssh plugin's Secret
created, the job's status not yet written), `watcher.after_publish_before_watch` (a relist
published, the watch not yet started), `admission.before_response` (a review decided, not yet
answered).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from dataclasses import dataclass

ENV = "PHALANX_FAILPOINTS"
_ENTRY = re.compile(
    r"^(?P<name>[\w.\-]+)=(?P<action>crash|error|sleep\((?P<seconds>[0-9.]+)\))(:(?P<count>\d+))?$"
)


class FailpointError(Exception):
    """Raised by a failpoint whose action is `error`."""


@dataclass
class _Failpoint:
    action: str
    seconds: float
    remaining: int | None  # None: every time


def parse(text: str) -> dict[str, _Failpoint]:
    """The failpoints of a PHALANX_FAILPOINTS value; a malformed entry names itself and the form."""
    points: dict[str, _Failpoint] = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        match = _ENTRY.match(entry)
        if match is None:
            raise ValueError(f"{ENV}: {entry!r} is not NAME=crash|error|sleep(SECONDS)[:COUNT]")
        action = match["action"].split("(")[0]
        count = match["count"]
        points[match["name"]] = _Failpoint(
            action, float(match["seconds"] or 0), int(count) if count is not None else None
        )
    return points


_points: dict[str, _Failpoint] | None = None


def _configured() -> dict[str, _Failpoint]:
    global _points
    if _points is None:
        _points = parse(os.environ.get(ENV, ""))
    return _points


async def hit(name: str) -> None:
    """Run the failpoint `name` if it is configured and has firings left."""
    point = _configured().get(name)
    if point is None or point.remaining == 0:
        return
    if point.remaining is not None:
        point.remaining -= 1
    if point.action == "crash":
        os.kill(os.getpid(), signal.SIGKILL)
    elif point.action == "sleep":
        await asyncio.sleep(point.seconds)
    else:
        raise FailpointError(f"failpoint {name}")
