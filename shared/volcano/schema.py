"""The structural schema of Volcano's kinds, checked as the API server checks a CRD's OpenAPI schema.

Used twice: the simulator refuses a Job, PodGroup, Queue or Command that breaks its CRD's schema
(and a Pod whose requests no resource vector holds)
with a 422 (as kube-apiserver does before any webhook runs), and admission runs the same checks
first, so that on a cluster whose CRDs are older or looser the rules still never read a list where
an object belongs, an integer beyond int32, a quantity no resource vector can hold, or a string
with a NUL in it. Pure: a dict in, `SchemaViolation`s out, never an exception, whatever the input.

Each violation is worded as the API server words a CRD validation error:
`spec.tasks: Invalid value: "object": spec.tasks in body must be of type array: "object"`.
Only the fields some part of Phalanx reads are described; unknown fields are left to the caller.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from shared.domain.quantity import QuantityError, milli_in_range
from shared.kube.names import qualified_name_errors

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
INT64_MAX = 2**63 - 1
# Deeper than any Volcano object needs (a pod template's affinity is about 12 levels), far below
# where a recursive reader in any service would fail.
MAX_DEPTH = 64
# A value quoted in a message is cut here, so a refusal never repeats a megabyte back.
SHOWN_CHARS = 64
MAX_VIOLATIONS = 20

Reason = Literal["FieldValueInvalid", "FieldValueRequired", "FieldValueTooLong"]


@dataclass(frozen=True, slots=True)
class SchemaViolation:
    field: str
    message: str  # without the field path, as a StatusCause carries it
    reason: Reason = "FieldValueInvalid"

    @property
    def text(self) -> str:
        return f"{self.field}: {self.message}"


# A node of the schema: a type name, or (type, children). Types: object (children: property
# shapes), map (children: the shape of every value), array (children: the item shape), string,
# integer (int32), int64, boolean, quantity, any.
Shape = str | tuple[str, Any]

QUANTITIES: Shape = ("map", "quantity")
STRINGS: Shape = ("map", "string")
TOPOLOGY: Shape = ("object", {"mode": "string", "highestTierAllowed": "integer", "highestTierName": "string"})
CONTAINER: Shape = (
    "object",
    {
        "name": "string",
        "image": "string",
        "resources": ("object", {"limits": QUANTITIES, "requests": QUANTITIES}),
    },
)
POD_SPEC: Shape = (
    "object",
    {
        "containers": ("array", CONTAINER),
        "initContainers": ("array", CONTAINER),
        "priorityClassName": "string",
        "schedulerName": "string",
        "restartPolicy": "string",
        "nodeName": "string",
        "nodeSelector": STRINGS,
        "overhead": QUANTITIES,
    },
)
TEMPLATE_METADATA: Shape = ("object", {"labels": STRINGS, "annotations": STRINGS})
POD_TEMPLATE: Shape = ("object", {"metadata": TEMPLATE_METADATA, "spec": POD_SPEC})
POLICY: Shape = (
    "object",
    {"event": "string", "events": ("array", "string"), "action": "string", "exitCode": "integer"},
)
TASK: Shape = (
    "object",
    {
        "name": "string",
        "replicas": "integer",
        "minAvailable": "integer",
        "maxRetry": "integer",
        "template": POD_TEMPLATE,
        "policies": ("array", POLICY),
        "topologyPolicy": "string",
        "dependsOn": ("object", {"name": ("array", "string"), "iteration": "string"}),
        "partitionPolicy": (
            "object",
            {
                "totalPartitions": "integer",
                "partitionSize": "integer",
                "minPartitions": "integer",
                "networkTopology": TOPOLOGY,
            },
        ),
    },
)
METADATA: Shape = (
    "object",
    {"name": "string", "namespace": "string", "labels": STRINGS, "annotations": STRINGS},
)
SPECS: dict[str, Shape] = {
    "Job": (
        "object",
        {
            "schedulerName": "string",
            "minAvailable": "integer",
            "minSuccess": "integer",
            "maxRetry": "integer",
            "ttlSecondsAfterFinished": "integer",
            "queue": "string",
            "priorityClassName": "string",
            "tasks": ("array", TASK),
            "policies": ("array", POLICY),
            "plugins": ("map", ("array", "string")),
            "volumes": (
                "array",
                ("object", {"mountPath": "string", "volumeClaimName": "string", "volumeClaim": "object"}),
            ),
            "networkTopology": TOPOLOGY,
        },
    ),
    "PodGroup": (
        "object",
        {
            "minMember": "integer",
            "minTaskMember": ("map", "integer"),
            "queue": "string",
            "priorityClassName": "string",
            "minResources": QUANTITIES,
            "networkTopology": TOPOLOGY,
            "subGroupPolicy": ("array", ("object", {"name": "string", "networkTopology": TOPOLOGY})),
        },
    ),
    "Queue": (
        "object",
        {
            "weight": "integer",
            "priority": "integer",
            "parent": "string",
            "reclaimable": "boolean",
            "capability": QUANTITIES,
            "deserved": QUANTITIES,
            "guarantee": ("object", {"resource": QUANTITIES}),
        },
    ),
}
MEMBER_SELECTOR: Shape = (
    "object",
    {
        "exactMatch": ("object", {"name": "string"}),
        "regexMatch": ("object", {"pattern": "string"}),
        "labelMatch": ("object", {"matchLabels": STRINGS, "matchExpressions": ("array", "object")}),
    },
)
SPECS["HyperNode"] = (
    "object",
    {
        "tier": "integer",
        "tierName": "string",
        "members": ("array", ("object", {"type": "string", "selector": MEMBER_SELECTOR})),
    },
)
# A Pod is not Volcano's, but the same bounds keep its requests within what the services hold.
SPECS["Pod"] = POD_SPEC
# A Command keeps its fields at the top level, beside metadata.
COMMAND: Shape = (
    "object",
    {
        "action": "string",
        "reason": "string",
        "message": "string",
        "target": ("object", {"apiVersion": "string", "kind": "string", "name": "string"}),
    },
)
TYPE_WORDS = {"map": "object", "int64": "integer", "quantity": "string"}


def check(kind: str, obj: Any, *, depth_checked: bool = False) -> list[SchemaViolation]:
    """What is wrong with `obj` as a `kind` object, at most MAX_VIOLATIONS of it. A caller that
    has just held `obj` to MAX_DEPTH itself says so with `depth_checked`."""
    found: list[SchemaViolation] = []
    if not isinstance(obj, Mapping):
        return [SchemaViolation("<root>", f'Invalid value: "{json_type(obj)}": must be of type object')]
    if not depth_checked and (deep := too_deep(obj)) is not None:
        return [SchemaViolation(deep, f"Invalid value: nesting deeper than {MAX_DEPTH} levels")]
    _walk(obj.get("metadata"), METADATA, "metadata", found)
    if kind == "Command":
        _walk({key: obj.get(key) for key in ("action", "reason", "message", "target")}, COMMAND, "", found)
    elif kind in SPECS:
        _walk(obj.get("spec"), SPECS[kind], "spec", found)
    return found[:MAX_VIOLATIONS]


def _walk(value: Any, shape: Shape, path: str, found: list[SchemaViolation]) -> None:
    if value is None or len(found) >= MAX_VIOLATIONS:
        return  # absent (or null, which a CRD drops as absent) is the rules' business
    kind, children = shape if isinstance(shape, tuple) else (shape, None)
    if kind == "any":
        return
    if (wrong := _type_error(value, kind, path)) is not None:
        found.append(wrong)
        return
    if kind == "object" and children:
        for key, child in children.items():  # the schema's own keys: nothing to escape
            _walk(value.get(key), child, f"{path}.{key}" if path else key, found)
    elif kind == "map" and children:
        for key, item in value.items():
            _key(str(key), children, path, found)
            _walk(item, children, f"{path}[{shown(key)}]", found)
    elif kind == "array" and children:
        for index, item in enumerate(value):
            _walk(item, children, f"{path}[{index}]", found)
    elif kind == "integer":
        _range(value, path, INT32_MIN, INT32_MAX, found)
    elif kind == "int64":
        _range(value, path, -INT64_MAX - 1, INT64_MAX, found)
    elif kind == "quantity":
        _quantity(value, path, found)
    if kind == "string" and "\x00" in value:
        found.append(
            SchemaViolation(path, f"Invalid value: {quoted(value)}: must not contain NUL characters")
        )


def _key(key: str, values: Shape, path: str, found: list[SchemaViolation]) -> None:
    """A map's key: never a NUL (PostgreSQL's JSONB refuses it); a resource name, the key of a
    quantity map, is a qualified name as Kubernetes requires (`cpu`, `nvidia.com/gpu`)."""
    if "\x00" in key:
        found.append(SchemaViolation(path, f"Invalid value: {quoted(key)}: must not contain NUL characters"))
    elif values == "quantity" and (errors := qualified_name_errors(key)):
        found.append(SchemaViolation(path, f"Invalid value: {quoted(key)}: {errors[0]}"))


def _type_error(value: Any, kind: str, path: str) -> SchemaViolation | None:
    expected: tuple[type, ...]
    if kind in ("object", "map"):
        expected = (Mapping,)
    elif kind == "array":
        expected = (list,)
    elif kind == "string":
        expected = (str,)
    elif kind == "boolean":
        expected = (bool,)
    elif kind == "quantity":
        expected = (str, int, float)
    else:
        expected = (int,)
    if isinstance(value, expected) and not (isinstance(value, bool) and kind != "boolean"):
        return None
    got = json_type(value)
    want = TYPE_WORDS.get(kind, kind)
    if kind == "quantity":
        want = "integer or string"
    return SchemaViolation(path, f'Invalid value: "{got}": {path} in body must be of type {want}: "{got}"')


def _range(value: int, path: str, lowest: int, highest: int, found: list[SchemaViolation]) -> None:
    if value > highest:
        found.append(
            SchemaViolation(
                path,
                f"Invalid value: {shown(value)}: {path} in body should be less than or equal to {highest}",
            )
        )
    elif value < lowest:
        found.append(
            SchemaViolation(
                path,
                f"Invalid value: {shown(value)}: {path} in body should be greater than or equal to {lowest}",
            )
        )


def _quantity(value: str | int | float, path: str, found: list[SchemaViolation]) -> None:
    try:
        representable = milli_in_range(value)
    except (QuantityError, ValueError, OverflowError):
        found.append(
            SchemaViolation(
                path,
                f"Invalid value: {quoted(value)}: must be a quantity such as '500m' or '2Gi' "
                "(at most 64 characters, exponent within ±40)",
            )
        )
        return
    if not representable:
        found.append(
            SchemaViolation(
                path, f"Invalid value: {quoted(value)}: must be at most {INT64_MAX} milli-units (about 9.2P)"
            )
        )


def too_deep(value: Any) -> str | None:
    """The path where nesting passes MAX_DEPTH, found without recursion (so any depth is safe).

    Every object the simulator and admission take passes here, several times over: the common
    answer (not too deep) walks only the containers and builds no path; the path is spelled out
    only for the rare object that fails."""
    return None if not _nested_past_limit(value) else _deepest_path(value)


def _nested_past_limit(value: Any) -> bool:
    # A container at depth MAX_DEPTH with anything in it puts that thing past the limit.
    containers: list[tuple[Any, int]] = [(value, 0)]
    while containers:
        current, depth = containers.pop()
        items = _children(current)
        if items is None:
            continue
        if depth >= MAX_DEPTH and items:
            return True
        containers.extend((item, depth + 1) for item in items if not isinstance(item, _SCALARS))
    return False


_SCALARS = (str, int, float, bool, type(None))


def _children(value: Any) -> Collection[Any] | None:
    if isinstance(value, dict):
        return value.values()
    if isinstance(value, list):
        return value
    if not isinstance(value, _SCALARS) and isinstance(value, Mapping):
        return value.values()
    return None


def _deepest_path(value: Any) -> str | None:
    """The first path past MAX_DEPTH, in the order a depth-first walk meets it."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        current, depth, path = stack.pop()
        if depth > MAX_DEPTH:
            return path or "<root>"
        if isinstance(current, Mapping):
            stack.extend((item, depth + 1, _join(path, str(key))) for key, item in current.items())
        elif isinstance(current, list):
            stack.extend((item, depth + 1, f"{path}[{index}]") for index, item in enumerate(current))
    return None


# JSON's type names, most specific first (a bool is also an int in Python).
_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "boolean"),
    (Mapping, "object"),
    (list, "array"),
    (str, "string"),
    (int, "integer"),
    (float, "number"),
)


def json_type(value: Any) -> str:
    for python_type, name in _JSON_TYPES:
        if isinstance(value, python_type):
            return name
    return "null" if value is None else type(value).__name__


def _join(path: str, key: str) -> str:
    return f"{path}.{shown(key)}" if path else shown(key)


def shown(value: object) -> str:
    """A value as it may appear in a message: cut to SHOWN_CHARS, NULs made visible."""
    text = str(value).replace("\x00", "\\x00")
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}...({len(text)} characters)"


def quoted(value: object) -> str:
    return f'"{shown(value)}"' if isinstance(value, str) else shown(value)
