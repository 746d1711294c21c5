"""The message envelope: CloudEvents 1.0 in structured JSON mode, typed with pydantic.

Every message on the bus is `CloudEvent[Data]`, whose `type` names exactly one data model (registered
with `event_type`). The publisher sets `Nats-Msg-Id` to the event's `id`, so the id doubles as the key
that makes consumers idempotent. The optional `traceparent` extension attribute carries a job's
trace from service to service (shared/tracing.py). `decode` turns raw bytes back into the registered model.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ClassVar, Generic, Literal, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field


class EventData(BaseModel):
    """Base of every event's `data`: frozen, unknown fields refused, one `TYPE` per model."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    TYPE: ClassVar[str]


DataT = TypeVar("DataT", bound=EventData)

_REGISTRY: dict[str, type[EventData]] = {}

E = TypeVar("E", bound=type[EventData])


def event_type(name: str) -> Callable[[E], E]:
    """Register a data model under its CloudEvents `type`, e.g. "phalanx.cluster.object.changed.v1"."""

    def register(cls: E) -> E:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"event type {name} is registered twice")
        cls.TYPE = name
        _REGISTRY[name] = cls
        return cls

    return register


class CloudEvent(BaseModel, Generic[DataT]):
    model_config = ConfigDict(frozen=True, extra="forbid")

    specversion: Literal["1.0"] = "1.0"
    id: str
    source: str
    type: str
    subject: str | None = None
    time: datetime
    datacontenttype: Literal["application/json"] = "application/json"
    # The CloudEvents distributed-tracing extension: the W3C trace context of the job this event
    # is a step of (shared/tracing.py). Absent when no trace began.
    traceparent: str | None = None
    data: DataT

    def to_bytes(self) -> bytes:
        document = self.model_dump(mode="json")
        for optional in ("subject", "traceparent"):
            if document[optional] is None:
                del document[optional]  # CloudEvents: an absent optional attribute is left out
        return orjson.dumps(document)


def new_event(
    data: DataT,
    *,
    source: str,
    subject: str | None = None,
    event_id: str | None = None,
    time: datetime | None = None,
    traceparent: str | None = None,
) -> CloudEvent[DataT]:
    """Wrap `data`; pass `event_id` when the id must be stable across retries (idempotency)."""
    model: Any = _parametrized(type(data))
    event: CloudEvent[DataT] = model(
        id=event_id or str(uuid.uuid4()),
        source=source,
        type=data.TYPE,
        subject=subject,
        time=time or datetime.now(UTC),
        traceparent=traceparent,
        data=data,
    )
    return event


class UnknownEventType(ValueError):
    pass


def decode(raw: bytes) -> CloudEvent[Any]:
    """Parse a structured CloudEvent and validate its data against the registered model."""
    document = orjson.loads(raw)
    model = _REGISTRY.get(document.get("type", ""))
    if model is None:
        raise UnknownEventType(f"unknown event type {document.get('type')!r}")
    parametrized: Any = _parametrized(model)
    return parametrized.model_validate(document)  # type: ignore[no-any-return]


@functools.cache
def _parametrized(data_type: type[EventData]) -> type[CloudEvent[Any]]:
    # pydantic caches CloudEvent[X] too, but finding it again costs more than validating a small
    # event; every message published or consumed asks for it.
    return CloudEvent[data_type]  # type: ignore[valid-type]


def registered_types() -> dict[str, type[EventData]]:
    return dict(_REGISTRY)


__all__ = ["CloudEvent", "EventData", "Field", "decode", "event_type", "new_event"]
