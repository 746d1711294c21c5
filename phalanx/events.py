"""`phalanx events watch`: the audit stream, from the recent past on, then live.

An ephemeral ordered consumer on the AUDIT stream (nothing is left behind on the server). It starts
where the user asks: a look-back (`--since`, an hour by default, as `kubectl get events` shows the
recent past), a stream position (`--after`), or where a position file says the last run stopped
(`--position-file`); then it follows new events until interrupted. Which events, and how each reads,
is phalanx/event_lines.py. When nothing has been shown once the past is read, it says so in one line
(on stderr, so that a pipe of JSON lines stays clean).

Positions are the stream's sequence numbers: every JSON line carries its own as the CloudEvents
`sequence` attribute, and a position file records the last one seen together with the stream's
creation time, because `phalanx up` starts a new stream (and new numbers) for a new cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nats
import nats.js.errors
import orjson
from nats.js.api import ConsumerConfig, DeliverPolicy

from phalanx.event_lines import Selection, line
from shared.bus.credentials import connect_options
from shared.config import NatsSettings
from shared.messages import subjects

DEFAULT_SINCE = "1h"
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
QUIET_S = 0.5  # this long without a message once started: the past has been read
POSITION_WRITE_EVERY_S = 0.5


def parse_since(text: str, now: datetime) -> datetime | None:
    """`10m`, `2h`, `1d` ago, an ISO 8601 time, or `now` (None: only what happens from now on)."""
    text = text.strip()
    if text == "now":
        return None
    match = _DURATION.match(text)
    if match:
        return now - timedelta(**{_UNITS[match[2]]: float(match[1])})
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"--since {text!r}: expected a duration like 10m, 2h or 1d, an ISO time, or now"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass
class Start:
    """Where reading begins, and how to say it when nothing is there."""

    since: datetime | None = None
    after: int | None = None  # a stream sequence: begin with the event after it
    position_file: Path | None = None
    described: str = "from now on"


@dataclass
class _Position:
    file: Path | None
    stream_created: str = ""
    sequence: int = 0
    written: float = 0.0

    def advance(self, sequence: int, *, force: bool = False) -> None:
        self.sequence = sequence
        now = time.monotonic()
        if self.file and (force or now - self.written >= POSITION_WRITE_EVERY_S):
            self.save()
            self.written = now

    def save(self) -> None:
        if not self.file or not self.sequence:
            return
        record = {"stream": subjects.AUDIT_STREAM, "created": self.stream_created, "sequence": self.sequence}
        staging = self.file.with_name(f".{self.file.name}.tmp")
        staging.write_bytes(orjson.dumps(record))
        os.replace(staging, self.file)


def _resume_after(start: Start, stream_created: str, notice: Callable[[str], None]) -> int | None:
    if start.after is not None:
        return start.after
    if not start.position_file or not start.position_file.exists():
        return None
    try:
        record = orjson.loads(start.position_file.read_bytes())
        sequence = int(record["sequence"])
    except (ValueError, KeyError, TypeError):
        raise ValueError(
            f"{start.position_file} does not hold a position (expected JSON with 'sequence')"
        ) from None
    if record.get("created") != stream_created:
        notice(f"{start.position_file} is from an earlier audit stream; reading this one from its start")
        return 0
    return sequence


def _consumer_config(start: Start, after: int | None) -> ConsumerConfig:
    if after is not None:
        return ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=after + 1)
    if start.since is not None:
        return ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_TIME, opt_start_time=start.since)
    return ConsumerConfig(deliver_policy=DeliverPolicy.NEW)


def _printable(message: Any, document: dict[str, Any], as_json: bool) -> str:
    if not as_json:
        return line(document)
    document["sequence"] = str(message.metadata.sequence.stream)
    return orjson.dumps(document).decode()


async def watch(
    nats_url: str,
    *,
    start: Start | None = None,
    selection: Selection | None = None,
    emit: Callable[[str], None] = print,
    notice: Callable[[str], None] = lambda _: None,
    as_json: bool = False,
    stop_after_idle: float | None = None,
    since: datetime | None = None,
    pattern: str | None = None,
) -> int:
    """Emit matching events until interrupted (or idle for `stop_after_idle` s); returns the count.

    `since` and `pattern` are the short forms of `start` and `selection` for a look-back and a type glob.
    """
    start = start or Start(since=since)
    selection = selection or Selection(type_glob=pattern)
    # As the read-only auditor, replies come to the auditor's own inbox prefix (connect_options).
    settings = NatsSettings(url=nats_url, tls_ca_file=os.environ.get("PHALANX_NATS_TLS_CA_FILE"))
    connection = await nats.connect(**connect_options(settings))
    printed = 0
    position = _Position(start.position_file)
    try:
        js = connection.jetstream()
        stream = await _audit_stream(js, notice)
        position.stream_created = str(stream.created)
        after = _resume_after(start, position.stream_created, notice)
        subscription = await js.subscribe(
            subjects.STREAM_SUBJECTS[subjects.AUDIT_STREAM],
            ordered_consumer=True,
            config=_consumer_config(start, after),
        )
        announced = False
        quiet_since = time.monotonic()
        while True:
            try:
                message = await subscription.next_msg(timeout=QUIET_S)
            except (TimeoutError, nats.errors.TimeoutError):
                if not announced:
                    announced = True
                    if not printed:
                        which = "" if selection == Selection() else " matching"
                        described = start.described if after is None else f"after position {after}"
                        notice(f"No{which} events {described}; waiting for new ones (Ctrl-C stops).")
                if stop_after_idle is not None and time.monotonic() - quiet_since >= stop_after_idle:
                    return printed
                continue
            quiet_since = time.monotonic()
            document = orjson.loads(message.data)
            if selection.admits(document):
                emit(_printable(message, document, as_json))
                printed += 1
            position.advance(message.metadata.sequence.stream)
    finally:
        position.save()
        await connection.close()


async def _audit_stream(js: Any, notice: Callable[[str], None]) -> Any:
    """The AUDIT stream's description; waits (saying so once) until a service has created it."""
    said = False
    while True:
        try:
            return await js.stream_info(subjects.AUDIT_STREAM)
        except nats.js.errors.NotFoundError:
            if not said:
                notice("The audit stream does not exist yet (are the services running?); waiting for it.")
                said = True
            await asyncio.sleep(1.0)


def run(nats_url: str, **options: Any) -> int:
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(watch(nats_url, **options))
    return 0
