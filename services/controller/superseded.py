"""Shell: skip a gang's decision when a newer one on the stream supersedes it (issue #15).

Sits in front of the gang keeper (app.py's decision handler). A decision that waited in the
controller's queue longer than `look_after` seconds (by the event's own time: the controller
lags) is compared with the newest decision of its gang on the DECISIONS stream, read with the
bus's `last_message` (one JetStream `STREAM.MSG.GET` by subject; one subject per gang,
shared/messages/subjects.py). If the pure rule (core/superseded.py) says the newer one
supersedes it, the older is acknowledged unread: no leader check, no bind, no audit of a refusal;
the newer one is carried out or refused (and audited) in its turn. A decision handled promptly
is never looked up, so a controller that keeps up pays nothing.
The lookup failing (NATS away) only means the decision is handled as before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import structlog

from services.controller.core.superseded import supersedes
from services.controller.metrics import DECISIONS_REFUSED
from shared.bus.ports import Bus
from shared.messages import subjects
from shared.messages.envelope import CloudEvent, decode

log = structlog.get_logger()
# A decision that waited longer than this is compared with its gang's newest one. Far below the
# decision window, far above how long a prompt decision waits.
LOOK_AFTER_SECONDS = 2.0


class Supersession:
    def __init__(self, bus: Bus, *, look_after: float = LOOK_AFTER_SECONDS) -> None:
        self._bus = bus
        self._look_after = look_after

    async def superseded(self, event: CloudEvent[Any]) -> bool:
        """Whether `event` is out of date: then it is counted and logged here, and not carried out."""
        data = event.data
        sent = event.time if event.time.tzinfo is not None else event.time.replace(tzinfo=UTC)
        waited = (datetime.now(UTC) - sent).total_seconds()
        if waited < self._look_after:
            return False
        subject = subjects.decision(data.namespace, data.podgroup)
        try:
            newest = await self._bus.last_message(subjects.DECISIONS_STREAM, subject)
            if newest is None:
                return False
            newer = decode(newest).data
        except Exception as error:  # cannot tell: handle the decision as it is
            log.debug("newest decision unknown", gang=data.podgroup, error=f"{type(error).__name__}: {error}")
            return False
        if not supersedes(newer, data):
            return False
        DECISIONS_REFUSED.labels("superseded").inc()
        log.info(
            "decision superseded",
            gang=data.podgroup,
            decision=event.type,
            cycle=data.cycle,
            newer_cycle=newer.cycle,
            waited=round(waited, 1),
        )
        return True


def skipping_superseded(
    supersession: Supersession, handle: Callable[[CloudEvent[Any]], Awaitable[None]]
) -> Callable[[CloudEvent[Any]], Awaitable[None]]:
    """The decision handler `handle`, not called for a decision a newer one supersedes."""

    async def handled(event: CloudEvent[Any]) -> None:
        if not await supersession.superseded(event):
            await handle(event)

    return handled
