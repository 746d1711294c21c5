"""How one fetched message is handled: decode, run the handler bounded in time, retry, dead-letter.

Called by the bus (nats.py) for the message at the head of its object's lane, so everything here
keeps per-object order: a handler that fails is retried in place, after its back-off, while the
messages behind it wait in the lane (kept alive with in-progress acknowledgements) instead of
being handed back to the server and overtaking it.

- Success acks.
- `PermanentError`, or a payload that cannot be decoded at all, is dead-lettered at once.
- `TemporaryError`, any other exception (a handler bug such as a `ValueError` included) and a
  handler that runs past `handler_timeout` are retried with back-off; after `max_deliver`
  attempts the message is dead-lettered with the last reason.
- A message delivered more than `max_deliver` times without an outcome (the process died or hung
  each time) is dead-lettered before the handler runs again; the server itself never drops one.
- An event type this version does not know (a newer producer during a rolling upgrade) is handed
  back to the server with back-off, for a replica that knows it, and dead-lettered only after
  `max_deliver` deliveries.

Every dead letter goes to the DEADLETTER stream with its reason and is recorded on the audit
stream (`audit.<service>.dead-lettered`), so `phalanx events watch` shows it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import structlog
from pydantic import ValidationError

from shared.domain.errors import PermanentError, TemporaryError
from shared.messages import subjects
from shared.messages.audit import AuditRecorded, audit_event
from shared.messages.envelope import CloudEvent, UnknownEventType, decode
from shared.metrics import CONSUMER_DEAD_LETTERS, CONSUMER_HANDLED, CONSUMER_REDELIVERIES

log = structlog.get_logger()
Handler = Callable[[CloudEvent[Any]], Awaitable[None]]
MSG_ID = "Nats-Msg-Id"
AUDITED_SERVICES = ("watcher", "admission", "controller", "scheduler")


class DeliveredMessage(Protocol):
    """A delivered message as JetStream's client hands it out (`nats.aio.msg.Msg`); the in-memory
    bus (memory.py) hands out its own, so both run through this one delivery."""

    @property
    def subject(self) -> str: ...

    @property
    def data(self) -> bytes: ...

    @property
    def metadata(self) -> Any: ...  # .num_delivered, .stream, .sequence.stream

    async def ack(self) -> None: ...

    async def nak(self, delay: float | None = None) -> None: ...

    async def term(self) -> None: ...


class Publisher(Protocol):
    """Where dead letters and their audit records go (a JetStream context, or the in-memory bus)."""

    async def publish(self, subject: str, payload: bytes, *, headers: dict[str, str]) -> Any: ...


class Delivery:
    def __init__(self, js: Publisher, spec: Any, handler: Handler, stats: Any, *, service: str) -> None:
        self._js = js
        self._spec = spec
        self._handler = handler
        self._stats = stats
        self._service = service

    async def handle(self, msg: DeliveredMessage) -> None:
        spec = self._spec
        delivered = msg.metadata.num_delivered
        if delivered > 1:  # the server handed it out again: a crash, a hang or a lost ack before
            CONSUMER_REDELIVERIES.labels(spec.stream, spec.durable).inc()
        if delivered > spec.max_deliver:
            await self.dead_letter(msg, f"delivered {delivered} times without an outcome (crash or hang)")
            return
        try:
            event = decode(msg.data)
        except UnknownEventType as error:
            await self._hand_back(msg, delivered, f"{type(error).__name__}: {error}")
            return
        except (ValidationError, ValueError) as error:
            await self.dead_letter(msg, f"undecodable: {type(error).__name__}: {error}")
            return
        attempt = delivered
        while True:
            try:
                await asyncio.wait_for(self._handler(event), spec.handler_timeout)
            except asyncio.CancelledError:
                raise
            except PermanentError as error:
                await self.dead_letter(msg, f"PermanentError: {error}")
                return
            except TimeoutError:
                reason, delay = f"the handler ran past {spec.handler_timeout} s", None
                log.warning("handler timed out", durable=spec.durable, subject=msg.subject)
            except TemporaryError as error:
                reason, delay = f"TemporaryError: {error}", error.delay
            except Exception as error:
                log.exception("handler failed", durable=spec.durable, subject=msg.subject)
                reason, delay = f"{type(error).__name__}: {error}", None
            else:
                await msg.ack()
                self._stats.handled += 1
                self._stats.progress.finished()
                CONSUMER_HANDLED.labels(spec.stream, spec.durable).inc()
                return
            if attempt >= spec.max_deliver:
                await self.dead_letter(msg, f"gave up after {attempt} attempts: {reason}")
                return
            self._stats.retried += 1
            CONSUMER_REDELIVERIES.labels(spec.stream, spec.durable).inc()
            await asyncio.sleep(delay if delay is not None else self._backoff(attempt))
            attempt += 1

    def _backoff(self, attempt: int) -> float:
        backoff = self._spec.backoff
        return float(backoff[min(attempt - 1, len(backoff) - 1)])

    async def _hand_back(self, msg: DeliveredMessage, delivered: int, reason: str) -> None:
        if delivered >= self._spec.max_deliver:
            await self.dead_letter(msg, f"gave up after {delivered} deliveries: {reason}")
            return
        log.warning("message of an unknown type handed back", durable=self._spec.durable, reason=reason)
        await msg.nak(delay=self._backoff(delivered))
        self._stats.retried += 1

    async def dead_letter(self, msg: DeliveredMessage, reason: str) -> None:
        spec = self._spec
        log.error("dead-lettered", durable=spec.durable, subject=msg.subject, reason=reason)
        where = f"{msg.metadata.stream}:{msg.metadata.sequence.stream}"
        headers = {
            "Phalanx-Reason": reason[:1000],
            "Phalanx-Original-Subject": msg.subject,
            MSG_ID: f"dlq:{spec.durable}:{where}",
        }
        await self._js.publish(subjects.deadletter(spec.stream, spec.durable), msg.data, headers=headers)
        await msg.term()
        self._stats.dead_lettered += 1
        self._stats.progress.dead_lettered()
        CONSUMER_DEAD_LETTERS.labels(spec.stream, spec.durable).inc()
        self._stats.errors.append(reason)
        if self._service in AUDITED_SERVICES:
            await self._audit(msg, where, reason)

    async def _audit(self, msg: DeliveredMessage, where: str, reason: str) -> None:
        audit = AuditRecorded(
            service=self._service,
            action="dead-lettered",
            kind="Message",
            name=msg.subject,
            outcome="failed",
            reason=reason[:1000],
            details={"durable": self._spec.durable, "stream_sequence": where},
        )
        subject, event = audit_event(
            audit, event_id=f"audit:dlq:{self._spec.durable}:{where}", filed_under=self._spec.durable
        )
        try:
            await self._js.publish(subject, event.to_bytes(), headers={MSG_ID: event.id})
        except Exception as error:  # the dead letter itself is stored; the record is best effort
            log.warning("dead letter not audited", error=str(error))
