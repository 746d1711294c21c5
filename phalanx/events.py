"""`phalanx events watch`: read the audit stream, live or from a point in time.

An ephemeral ordered consumer on the AUDIT stream (nothing is left behind on the server), from
`--since` or from now; `--type` filters by `<service>.<action>` glob (e.g. `scheduler.*`,
`*.denied`). Each event prints as one line; `--json` prints the CloudEvent itself.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import nats
import orjson
from nats.js.api import ConsumerConfig, DeliverPolicy

from shared.bus.credentials import connect_options
from shared.config import NatsSettings
from shared.messages import subjects

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_since(text: str, now: datetime) -> datetime:
    """`10m`, `2h`, `1d` ago, or an ISO 8601 time."""
    match = _DURATION.match(text.strip())
    if match:
        return now - timedelta(**{_UNITS[match[2]]: float(match[1])})
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def format_line(document: dict[str, object]) -> str:
    data = document.get("data")
    if not isinstance(data, dict):
        return orjson.dumps(document).decode()
    where = "/".join(str(p) for p in (data.get("namespace"), data.get("name")) if p)
    parts = [
        str(document.get("time", ""))[:23],
        f"{data.get('service')}.{data.get('action')}",
        f"{data.get('kind')} {where}",
        str(data.get("outcome", "")),
    ]
    parts.extend(f"{key}={data[key]!r}" for key in ("reason", "message") if data.get(key))
    return "  ".join(parts)


def matches(document: dict[str, object], pattern: str | None) -> bool:
    if not pattern:
        return True
    data = document.get("data") or {}
    assert isinstance(data, dict)
    return fnmatch.fnmatch(f"{data.get('service')}.{data.get('action')}", pattern)


async def watch(
    nats_url: str,
    *,
    since: datetime | None,
    pattern: str | None,
    emit: Callable[[str], None],
    as_json: bool = False,
    stop_after_idle: float | None = None,
) -> int:
    """Print matching events until interrupted (or idle for `stop_after_idle` s); returns the count."""
    # As the read-only auditor, replies come to the auditor's own inbox prefix (connect_options).
    settings = NatsSettings(url=nats_url, tls_ca_file=os.environ.get("PHALANX_NATS_TLS_CA_FILE"))
    connection = await nats.connect(**connect_options(settings))
    printed = 0
    try:
        js = connection.jetstream()
        config = ConsumerConfig(
            deliver_policy=DeliverPolicy.BY_START_TIME if since else DeliverPolicy.NEW,
            opt_start_time=since,
        )
        subscription = await js.subscribe(
            f"{subjects.STREAM_SUBJECTS[subjects.AUDIT_STREAM]}", ordered_consumer=True, config=config
        )
        while True:
            try:
                message = await subscription.next_msg(timeout=stop_after_idle or 3600)
            except (TimeoutError, nats.errors.TimeoutError):
                if stop_after_idle:
                    return printed
                continue
            document = orjson.loads(message.data)
            if matches(document, pattern):
                emit(message.data.decode() if as_json else format_line(document))
                printed += 1
    finally:
        await connection.close()


def run(nats_url: str, **options: object) -> int:
    return asyncio.run(watch(nats_url, **options))  # type: ignore[arg-type]
