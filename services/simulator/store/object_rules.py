"""What kube-apiserver refuses of any object, whatever its kind: metadata syntax, sizes, schemas.

Called by `validation.validate` after mutating admission, before validating admission, as the
real API server orders it:
- label keys must be qualified names and values valid label values (63 characters, syntax);
  annotation keys qualified names, and all annotations together at most 256 KiB;
- no nesting deeper than the services' readers take;
- Volcano's kinds (and a Pod's requests) checked against their structural schema
  (`shared.volcano.schema`), worded as the API server words a CRD schema violation.
The object's stored size (etcd's 1.5 MiB) is `too_large`, a 413 rather than a 422 cause.
Pure: plain dicts in, causes out, never an exception whatever the shapes.
"""

from __future__ import annotations

from typing import Any

import orjson

from services.simulator.store.errors import FieldCause
from shared.kube.names import (
    ANNOTATIONS_MAX_BYTES,
    annotations_size,
    label_value_errors,
    qualified_name_errors,
)
from shared.volcano import schema

# etcd's default request limit: no stored object can be larger.
MAX_OBJECT_BYTES = 1_572_864
SCHEMA_KINDS = frozenset({"Job", "PodGroup", "Queue", "Command", "Pod", "HyperNode"})


def object_causes(kind: str, obj: dict[str, Any]) -> list[FieldCause]:
    if (deep := schema.too_deep(obj)) is not None:
        return [
            FieldCause(
                "FieldValueInvalid", f"Invalid value: nesting deeper than {schema.MAX_DEPTH} levels", deep
            )
        ]
    metadata = obj.get("metadata")
    causes = metadata_causes(metadata) if isinstance(metadata, dict) else []
    if kind in SCHEMA_KINDS:
        violations = schema.check(kind, obj, depth_checked=True)  # its depth was held just above
        causes += [FieldCause(v.reason, v.message, v.field) for v in violations]
    return causes[: schema.MAX_VIOLATIONS]


def metadata_causes(metadata: dict[str, Any]) -> list[FieldCause]:
    causes: list[FieldCause] = []
    labels = metadata.get("labels")
    if isinstance(labels, dict):
        for key, value in labels.items():
            causes += _key_causes("metadata.labels", key)
            if not isinstance(value, str):
                causes.append(_wrong_type(f"metadata.labels[{schema.shown(key)}]", value))
                continue
            causes += [
                FieldCause(
                    "FieldValueInvalid", f"Invalid value: {schema.quoted(value)}: {error}", "metadata.labels"
                )
                for error in label_value_errors(value)
            ]
    elif labels is not None:
        causes.append(_wrong_type("metadata.labels", labels, "object"))
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict):
        for key, value in annotations.items():
            causes += _key_causes("metadata.annotations", key.lower())
            if not isinstance(value, str):
                causes.append(_wrong_type(f"metadata.annotations[{schema.shown(key)}]", value))
        if annotations_size(annotations) > ANNOTATIONS_MAX_BYTES:
            message = f"Too long: must have at most {ANNOTATIONS_MAX_BYTES} bytes"
            causes.append(FieldCause("FieldValueTooLong", message, "metadata.annotations"))
    elif annotations is not None:
        causes.append(_wrong_type("metadata.annotations", annotations, "object"))
    return causes


def too_large(obj: dict[str, Any]) -> bool:
    return len(orjson.dumps(obj)) > MAX_OBJECT_BYTES


def _key_causes(field: str, key: str) -> list[FieldCause]:
    return [
        FieldCause("FieldValueInvalid", f"Invalid value: {schema.quoted(key)}: {error}", field)
        for error in qualified_name_errors(key)
    ]


def _wrong_type(field: str, value: Any, expected: str = "string") -> FieldCause:
    got = schema.json_type(value)
    return FieldCause(
        "FieldValueInvalid",
        f'Invalid value: "{got}": {field} in body must be of type {expected}: "{got}"',
        field,
    )
