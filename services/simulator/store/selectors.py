"""Label and field selectors: parsed once per request, then matched against every object.

List and watch requests carry them as query strings (`app=a,tier!=db`, `env in (a,b)`,
`spec.nodeName=node-1,status.phase!=Failed`); webhook configurations carry label selectors in
their structured form (`matchLabels`, `matchExpressions`). Both parse into the same `Selector`,
a tuple of requirements that all must hold. Pure: no store, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from services.simulator.store.errors import ApiError, bad_request


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!"
    values: frozenset[str] = frozenset()

    def holds(self, value: str | None) -> bool:
        op = self.operator
        if op == "=" or op == "in":
            return value is not None and value in self.values
        if op == "!=" or op == "notin":
            return value is None or value not in self.values
        if op == "exists":
            return value is not None
        return value is None


@dataclass(frozen=True)
class Selector:
    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches_labels(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.holds(labels.get(r.key)) for r in self.requirements)

    def matches_fields(self, obj: Mapping[str, Any]) -> bool:
        return all(r.holds(field_value(obj, r.key)) for r in self.requirements)

    def equality_value(self, key: str) -> str | None:
        """The value `key` must equal, when the selector pins it (used to pick an index)."""
        for r in self.requirements:
            if r.key == key and r.operator == "=" and len(r.values) == 1:
                return next(iter(r.values))
        return None


EVERYTHING = Selector()

_SET_TERM = re.compile(r"^\s*(!?)\s*([A-Za-z0-9./_-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside `( )`."""
    terms: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    terms.append("".join(current))
    return [t for t in terms if t.strip()]


def _equality(term: str) -> Requirement | None:
    for token, operator in (("!=", "!="), ("==", "="), ("=", "=")):
        if token in term:
            key, _, value = term.partition(token)
            return Requirement(key.strip(), operator, frozenset({value.strip()}))
    return None


def parse_label_selector(text: str | None) -> Selector:
    """Parse `a=b,c!=d,e in (x,y),f notin (z),g,!h`; 400 on a malformed selector."""
    if not text:
        return EVERYTHING
    requirements = []
    for term in _split_terms(text):
        if " in " not in f" {term} " and "notin" not in term and "=" in term:
            requirement = _equality(term)
        else:
            match = _SET_TERM.match(term)
            if match is None:
                raise bad_request(f"unable to parse requirement: {term!r}")
            negated, key, operator, values = match.groups()
            if operator:
                requirement = Requirement(
                    key, operator, frozenset(v.strip() for v in values.split(",") if v.strip())
                )
            else:
                requirement = Requirement(key, "!" if negated else "exists")
        assert requirement is not None
        if not _LABEL_KEY.match(requirement.key):
            raise bad_request(f"unable to parse requirement: invalid label key {requirement.key!r}")
        bad_values = [v for v in requirement.values if not _LABEL_VALUE.match(v)]
        if bad_values:
            raise bad_request(f"unable to parse requirement: invalid label value {bad_values[0]!r}")
        requirements.append(requirement)
    return Selector(tuple(requirements))


# The field labels kube-apiserver lets each kind be selected by, beside metadata.name and
# metadata.namespace (every kind, custom ones too: Volcano's CRDs declare no selectableFields).
# https://kubernetes.io/docs/concepts/overview/working-with-objects/field-selectors/
SELECTABLE_FIELDS: dict[str, frozenset[str]] = {
    "Pod": frozenset(
        {
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        }
    ),
    "Node": frozenset({"spec.unschedulable"}),
    "Namespace": frozenset({"status.phase"}),
    "Secret": frozenset({"type"}),
    "Service": frozenset({"spec.clusterIP", "spec.type"}),
    "Event": frozenset(
        {
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        }
    ),
}
_EVERY_KIND_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


def parse_field_selector(text: str | None, kind: str | None = None) -> Selector:
    """Parse `metadata.name=x,status.phase!=Failed`: equality terms only, as the apiserver; with
    `kind`, a field that kind cannot be selected by is 400 `field label not supported`."""
    if not text:
        return EVERYTHING
    requirements = []
    allowed = _EVERY_KIND_FIELDS | SELECTABLE_FIELDS.get(kind or "", frozenset())
    for term in _split_terms(text):
        requirement = _equality(term)
        if requirement is None or not requirement.key:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        if kind is not None and requirement.key not in allowed:
            raise bad_request(f"field label not supported: {requirement.key}")
        requirements.append(requirement)
    return Selector(tuple(requirements))


_EXPRESSION_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def from_label_selector_object(spec: Mapping[str, Any] | None) -> Selector:
    """A `metav1.LabelSelector` (`matchLabels` + `matchExpressions`); absent means everything."""
    if not spec:
        return EVERYTHING
    requirements = [
        Requirement(k, "=", frozenset({str(v)})) for k, v in (spec.get("matchLabels") or {}).items()
    ]
    for expression in spec.get("matchExpressions") or []:
        operator = _EXPRESSION_OPERATORS.get(expression.get("operator", ""))
        if operator is None:
            raise ApiError(400, "BadRequest", f"invalid operator {expression.get('operator')!r}")
        values = frozenset(str(v) for v in expression.get("values") or [])
        requirements.append(Requirement(expression["key"], operator, values))
    return Selector(tuple(requirements))


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string form of a dotted field path (`spec.nodeName`, `involvedObject.uid`).

    A missing field reads as "", as the apiserver's field sets do: `spec.nodeName=` selects the
    unassigned pods, which is how kube-scheduler-like watchers ask for them.
    """
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, Mapping):
            return ""
        current = current.get(part)
        if current is None:
            return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    return str(current)
