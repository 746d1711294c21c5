"""HyperNode admission (topology.volcano.sh/v1alpha1): Volcano's validation, with its messages.

Called by `review.py` on CREATE and UPDATE. Volcano checks a HyperNode in two places: the
ValidatingAdmissionPolicy `hypernode-validation-policy` (at least one member; exactly one of
exactMatch, regexMatch, labelMatch per member's selector; a non-empty, qualified exactMatch name;
a non-empty regexMatch pattern with balanced brackets) and its webhook (the pattern compiles).
Those messages are Volcano's, and the first rule broken is reported, as the policy reports it.
The CRD's own bounds (a tier of 0 or more, a member type of Node or HyperNode) come first, worded
as the API server words a CRD schema violation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from shared.kube.names import qualified_name_errors

from .errors import FieldError, MessageStyle, go_invalid

STYLE: MessageStyle = "first"
MEMBER_TYPES = ("Node", "HyperNode")
SELECTORS = ("exactMatch", "regexMatch", "labelMatch")
NO_MEMBERS = "member must have at least one member"
NO_SELECTOR = "member selector must have one of exactMatch, regexMatch, or labelMatch"
MANY_SELECTORS = "cannot specify more than one selector type (exactMatch, regexMatch, labelMatch)"
NO_EXACT_NAME = "member exactMatch name is required"
BAD_EXACT_NAME = (
    "member exactMatch validate failed [name part must consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character]"
)
NO_PATTERN = "member regexMatch pattern is required"
UNBALANCED = (
    ("(", ")", "member regexMatch pattern is invalid: unmatched parentheses"),
    ("[", "]", "member regexMatch pattern is invalid: unmatched square brackets"),
    ("{", "}", "member regexMatch pattern is invalid: unmatched curly braces"),
)


def validate_hypernode(hypernode: Mapping[str, Any]) -> list[FieldError]:
    """The first of Volcano's HyperNode rules that `hypernode` breaks, or nothing."""
    spec = hypernode.get("spec") or {}
    for check in (_crd_errors, _policy_errors, _pattern_errors):
        errors = check(spec)
        if errors:
            return errors[:1]
    return []


def _members(spec: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any], Mapping[str, Any]]]:
    found = []
    for index, member in enumerate(spec.get("members") or []):
        if isinstance(member, Mapping):
            selector = member.get("selector")
            found.append((index, member, selector if isinstance(selector, Mapping) else {}))
    return found


def _crd_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    tier = spec.get("tier")
    if tier is None:
        return [FieldError("spec.tier", "Required value", "FieldValueRequired")]
    if isinstance(tier, int) and tier < 0:
        detail = "spec.tier in body should be greater than or equal to 0"
        return [FieldError("spec.tier", detail, text=go_invalid("spec.tier", tier, detail))]
    for index, member, _ in _members(spec):
        kind = member.get("type")
        field = f"spec.members[{index}].type"
        if kind is None:
            return [FieldError(field, "Required value", "FieldValueRequired")]
        if kind not in MEMBER_TYPES:
            detail = 'supported values: "Node", "HyperNode"'
            text = f'{field}: Unsupported value: "{kind}": {detail}'
            return [FieldError(field, detail, "FieldValueNotSupported", text=text)]
    return []


def _policy_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    members = _members(spec)
    if not spec.get("members"):
        return [FieldError("spec.members", NO_MEMBERS, "FieldValueRequired")]
    for index, _, selector in members:
        count = sum(1 for key in SELECTORS if key in selector)
        field = f"spec.members[{index}].selector"
        if count == 0:
            return [FieldError(field, NO_SELECTOR, "FieldValueRequired")]
        if count > 1:
            return [FieldError(field, MANY_SELECTORS, "FieldValueForbidden")]
    for index, _, selector in members:
        exact = selector.get("exactMatch")
        if isinstance(exact, Mapping):
            name = str(exact.get("name") or "")
            field = f"spec.members[{index}].selector.exactMatch.name"
            if not name:
                return [FieldError(field, NO_EXACT_NAME, "FieldValueRequired")]
            if qualified_name_errors(name):
                return [FieldError(field, BAD_EXACT_NAME)]
    for index, _, selector in members:
        regex = selector.get("regexMatch")
        if isinstance(regex, Mapping):
            pattern = str(regex.get("pattern") or "")
            field = f"spec.members[{index}].selector.regexMatch.pattern"
            if not pattern:
                return [FieldError(field, NO_PATTERN, "FieldValueRequired")]
            for opening, closing, message in UNBALANCED:
                if opening in pattern and pattern.count(opening) != pattern.count(closing):
                    return [FieldError(field, message)]
    return []


def _pattern_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    for _index, _, selector in _members(spec):
        regex = selector.get("regexMatch")
        if not isinstance(regex, Mapping) or not regex.get("pattern"):
            continue
        pattern = str(regex["pattern"])
        try:
            re.compile(pattern)
        except re.error as error:
            field = "spec.members.selector.regexMatch.pattern"  # Volcano's path, without an index
            detail = f"member regexMatch pattern is invalid: {error}"
            return [FieldError(field, detail, text=go_invalid(field, pattern, detail))]
    return []
