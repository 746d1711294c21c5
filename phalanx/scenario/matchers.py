"""Comparing what a scenario expects with what an object holds: paths, values and matchers.

Pure: the judges call `lookup` to read a dotted path out of a plain dict and `matches` to decide a
value, and `describe`/`show` to say both in a result line. A value is a plain value (equal after
both sides are read as YAML, quantities by value), a list for phases (any of them), or one of the
matchers `{contains}`, `{present}`, `{absent}`, `{includes}`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import yaml

from shared.domain.quantity import QuantityError, parse_quantity


class _Missing:
    """What a path that leads nowhere yields: distinct from a null value."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()
MATCHER_KEYS: Final = frozenset({"contains", "present", "absent", "includes"})


def check_matcher(value: Any) -> Any:
    """Refuse a malformed matcher (`{contains: 3}`, two matcher keys at once) at parse time."""
    if not (isinstance(value, Mapping) and MATCHER_KEYS & set(value)):
        return value
    if len(value) != 1:
        keys = ", ".join(sorted(map(str, value)))
        raise ValueError(f"a matcher has exactly one of contains, present, absent, includes: {keys}")
    ((key, argument),) = value.items()
    if key == "contains" and not isinstance(argument, str):
        raise ValueError("contains takes a string")
    if key in ("present", "absent") and not isinstance(argument, bool):
        raise ValueError(f"{key} takes true or false")
    if key == "includes":
        if not isinstance(argument, list):
            raise ValueError("includes takes a list of items")
        for item in argument:
            check_matcher(item)
    return value


# -- paths ---------------------------------------------------------------------------------


def parse_path(path: str) -> tuple[str | int, ...]:
    """`metadata.labels[volcano.sh/job-name]` → (metadata, labels, volcano.sh/job-name);
    `spec.containers[0].env` → (spec, containers, 0, env)."""
    tokens: list[str | int] = []
    segment, position = "", 0
    while position < len(path):
        char = path[position]
        if char == ".":
            if segment:
                tokens.append(segment)
            elif not tokens or path[position - 1] != "]":
                raise ValueError(f"empty segment in path {path!r}")
            segment = ""
        elif char == "[":
            if segment:
                tokens.append(segment)
                segment = ""
            end = path.find("]", position)
            if end < 0 or end == position + 1:
                raise ValueError(f"unclosed or empty bracket in path {path!r}")
            key = path[position + 1 : end]
            tokens.append(int(key) if key.isdigit() else key)
            position = end
        elif char == "]":
            raise ValueError(f"unmatched ']' in path {path!r}")
        else:
            segment += char
        position += 1
    if segment:
        tokens.append(segment)
    elif not tokens or path.endswith("."):
        raise ValueError(f"empty segment in path {path!r}")
    return tuple(tokens)


def lookup(obj: Any, path: str | Sequence[str | int]) -> Any:
    """The value at `path` in `obj`, or MISSING."""
    current = obj
    for token in parse_path(path) if isinstance(path, str) else path:
        if isinstance(current, Mapping):
            key = str(token)
            if key not in current:
                return MISSING
            current = current[key]
        elif isinstance(current, list) and (isinstance(token, int) or str(token).isdigit()):
            index = int(token)
            if index >= len(current):
                return MISSING
            current = current[index]
        else:
            return MISSING
    return current


# -- values --------------------------------------------------------------------------------


def _as_yaml(value: Any) -> Any:
    # One-line strings only: YAML folds a multi-line plain scalar into one line, which would
    # make "a\nb" equal "a b".
    if isinstance(value, str) and "\n" not in value:
        try:
            return yaml.safe_load(value) if value.strip() else value
        except yaml.YAMLError:
            return value
    return value


def _quantity(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return parse_quantity(value)
    except (QuantityError, ValueError):
        return None


def values_equal(expected: Any, observed: Any) -> bool:
    """Equal after both are read as YAML; quantities (`1000m`, `1`) by value; recursively."""
    if observed is MISSING:
        return expected is None
    if expected == observed and type(expected) is type(observed):
        return True
    expected, observed = _as_yaml(expected), _as_yaml(observed)
    if isinstance(expected, Mapping) and isinstance(observed, Mapping):
        return set(map(str, expected)) == set(map(str, observed)) and all(
            values_equal(value, observed[key]) for key, value in expected.items()
        )
    if isinstance(expected, list) and isinstance(observed, list):
        return len(expected) == len(observed) and all(
            values_equal(e, o) for e, o in zip(expected, observed, strict=True)
        )
    if isinstance(expected, bool) or isinstance(observed, bool):
        return expected is observed
    if bool(expected == observed):
        return True
    left, right = _quantity(expected), _quantity(observed)
    return left is not None and right is not None and bool(left == right)


def _element_matches(item: Any, element: Any) -> bool:
    if isinstance(item, Mapping) and not (MATCHER_KEYS & set(item)):
        return isinstance(element, Mapping) and all(
            matches(value, element.get(str(key), MISSING)) for key, value in item.items()
        )
    return matches(item, element)


def matches(expected: Any, observed: Any, *, any_of: bool = False) -> bool:
    """Does `observed` (MISSING for an absent path) satisfy `expected`?

    `any_of`: a list means "any of these" (phases, states) rather than an equal list.
    """
    if isinstance(expected, Mapping) and len(expected) == 1 and MATCHER_KEYS & set(expected):
        ((key, argument),) = expected.items()
        if key == "present":
            return (observed is not MISSING) is bool(argument)
        if key == "absent":
            return (observed is MISSING) is bool(argument)
        if key == "contains":
            return observed is not MISSING and argument in _text(observed)
        return isinstance(observed, list) and all(
            any(_element_matches(item, element) for element in observed) for item in argument
        )
    if any_of and isinstance(expected, list):
        return any(matches(choice, observed) for choice in expected)
    return values_equal(expected, observed)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else _compact(value)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "), sort_keys=True, default=str)


def describe(expected: Any, *, any_of: bool = False) -> str:
    """The expected value as a result line shows it."""
    if isinstance(expected, Mapping) and len(expected) == 1 and MATCHER_KEYS & set(expected):
        ((key, argument),) = expected.items()
        if key == "contains":
            return f"containing {argument!r}"
        if key in ("present", "absent"):
            return key if argument else ("absent" if key == "present" else "present")
        return f"including {_compact(argument)}"
    if any_of and isinstance(expected, list):
        return "one of " + "|".join(map(show, expected))
    return show(expected)


def show(observed: Any) -> str:
    """An observed value as a result line shows it."""
    if observed is MISSING:
        return "(absent)"
    if isinstance(observed, str):
        return repr(observed) if ("\n" in observed or not observed) else observed
    if observed is None:
        return "null"
    if isinstance(observed, bool):
        return "true" if observed else "false"
    return _compact(observed) if isinstance(observed, Mapping | list) else str(observed)
