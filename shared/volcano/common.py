"""Building blocks every Volcano object shares: the base model, ObjectMeta and resource lists.

Everything that reads or writes Volcano objects (watcher, admission, controller, scheduler,
simulator) goes through these models. They keep the manifest exactly as written: camelCase
aliases, unknown fields kept (extra="allow"), quantities kept in their original spelling, so
`to_manifest()` returns what was loaded; `Quantity` / `Resources` views compute with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_serializer,
)
from pydantic.alias_generators import to_camel

from shared.domain.quantity import Quantity, parse_quantity
from shared.domain.resources import Resources

from .enums import NetworkTopologyMode


def _checked_quantity(value: str | int | float) -> str | int | float:
    # Parse only to reject what Kubernetes would reject; keep the original spelling for dumps.
    parse_quantity(value)
    return value


# Strict types: YAML `true` or a numeric string must not be coerced into something else.
QuantityValue = Annotated[StrictStr | StrictInt | StrictFloat, AfterValidator(_checked_quantity)]
"""A resource amount as written ("500m", "2Gi", 4): validated, never rewritten."""

ResourceList = dict[str, QuantityValue]


def quantities(resources: Mapping[str, str | int | float] | None) -> dict[str, Quantity]:
    """The amounts of a resource list as `Quantity` objects (empty for None)."""
    return {name: Quantity(amount) for name, amount in (resources or {}).items()}


def to_resources(resources: Mapping[str, str | int | float] | None) -> Resources:
    """A resource list as an immutable milli-unit vector."""
    return Resources.parse(resources)


class VolcanoModel(BaseModel):
    """Base of every model here: Kubernetes field names, unknown fields kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        use_enum_values=False,
    )

    @model_serializer(mode="wrap")
    def _include_changed_defaults(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        """With exclude_unset, also dump fields that kept their default object but were changed
        in place (`job.status.state.phase = ...` on a job loaded without status)."""
        body: dict[str, Any] = handler(self)
        if not info.exclude_unset:
            return body
        for name, field in type(self).model_fields.items():
            if name in self.model_fields_set:
                continue
            value = getattr(self, name)
            key = field.alias if info.by_alias and field.alias else name
            if isinstance(value, VolcanoModel):
                nested = value.model_dump(by_alias=info.by_alias, exclude_unset=True, mode=info.mode)
                if nested:
                    body[key] = nested
            elif value != field.get_default(call_default_factory=True):
                body |= self.model_dump(include={name}, by_alias=info.by_alias, mode=info.mode)
        return body

    def to_dict(self) -> dict[str, Any]:
        """Kubernetes JSON of exactly the fields that were set (what was loaded, plus changes)."""
        return self.model_dump(by_alias=True, exclude_unset=True, mode="json")


class ObjectMeta(VolcanoModel):
    """The part of metav1.ObjectMeta the project reads; every other field is kept as extra."""

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[dict[str, Any]] | None = None
    finalizers: list[str] | None = None


class NetworkTopologySpec(VolcanoModel):
    mode: NetworkTopologyMode | None = None
    highest_tier_allowed: int | None = None
    highest_tier_name: str | None = None


class TopLevelObject(VolcanoModel):
    """A whole Kubernetes object: apiVersion, kind, metadata; subclasses add spec and status."""

    api_version: str
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or ""

    def to_manifest(self) -> dict[str, Any]:
        """The object as Kubernetes JSON, always with apiVersion and kind first."""
        body = self.to_dict()
        head = {"apiVersion": self.api_version, "kind": self.kind}
        return head | {key: value for key, value in body.items() if key not in head}

    @classmethod
    def from_manifest(cls, doc: Mapping[str, Any]) -> Self:
        return cls.model_validate(doc)
