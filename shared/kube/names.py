"""Kubernetes name checks (DNS-1123 label and subdomain, qualified name) with their messages.

Used by the job rules (task, pod, job and volume claim names) and by the simulator for every
object's metadata (names, label keys and values, annotation keys and size). The messages are the
ones Kubernetes' validation library returns, since Volcano passes them through verbatim.
"""

from __future__ import annotations

import re

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + "(\\." + _LABEL_FMT + ")*"
_QUALIFIED_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL = re.compile(f"^{_LABEL_FMT}$")
_SUBDOMAIN = re.compile(f"^{_SUBDOMAIN_FMT}$")
_QUALIFIED = re.compile(f"^{_QUALIFIED_FMT}$")

LABEL_MAX = 63
SUBDOMAIN_MAX = 253

# Every object's label keys, values and annotation keys are checked on every write, and the same
# few names come back again and again: the valid ones seen lately are known valid (a valid name
# is short, so the sets stay small; they start over when full).
_VALID_QUALIFIED_NAMES: set[str] = set()
_VALID_LABEL_VALUES: set[str] = set()
_REMEMBERED = 4096


def _remember(valid: set[str], value: str) -> None:
    if len(valid) >= _REMEMBERED:
        valid.clear()
    valid.add(value)


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    # Kubernetes' RegexError: examples end in "', " and are joined by " or ", hence two spaces.
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def _max_len(limit: int) -> str:
    return f"must be no more than {limit} characters"


def dns1123_label_errors(value: str) -> list[str]:
    errors = []
    if len(value) > LABEL_MAX:
        errors.append(_max_len(LABEL_MAX))
    if not _LABEL.fullmatch(value):
        errors.append(
            _regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                "or '-', and must start and end with an alphanumeric character",
                _LABEL_FMT,
                "my-name",
                "123-abc",
            )
        )
    return errors


def dns1123_subdomain_errors(value: str) -> list[str]:
    errors = []
    if len(value) > SUBDOMAIN_MAX:
        errors.append(_max_len(SUBDOMAIN_MAX))
    if not _SUBDOMAIN.fullmatch(value):
        errors.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character",
                _SUBDOMAIN_FMT,
                "example.com",
            )
        )
    return errors


def qualified_name_errors(value: str) -> list[str]:
    """Kubernetes' IsQualifiedName: an optional DNS subdomain prefix and '/', then a name."""
    if value in _VALID_QUALIFIED_NAMES:
        return []
    errors = _qualified_name_errors(value)
    if not errors:
        _remember(_VALID_QUALIFIED_NAMES, value)
    return errors


def _qualified_name_errors(value: str) -> list[str]:
    errors: list[str] = []
    parts = value.split("/")
    message = (
        "must consist of alphanumeric characters, '-', '_' or '.', "
        "and must start and end with an alphanumeric character"
    )
    if len(parts) > 2:
        return [
            "a qualified name "
            + _regex_error(message, _QUALIFIED_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend(f"prefix part {error}" for error in dns1123_subdomain_errors(prefix))
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > LABEL_MAX:
        errors.append("name part " + _max_len(LABEL_MAX))
    if not _QUALIFIED.fullmatch(name):
        errors.append("name part " + _regex_error(message, _QUALIFIED_FMT, "MyName", "my.name", "123-abc"))
    return errors


_LABEL_VALUE_FMT = "(" + _QUALIFIED_FMT + ")?"
_LABEL_VALUE = re.compile(f"^{_LABEL_VALUE_FMT}$")
# Kubernetes' limit on the summed length of an object's annotation keys and values.
ANNOTATIONS_MAX_BYTES = 256 * 1024


def label_value_errors(value: str) -> list[str]:
    """Kubernetes' IsValidLabelValue."""
    if value in _VALID_LABEL_VALUES:
        return []
    errors = _label_value_errors(value)
    if not errors:
        _remember(_VALID_LABEL_VALUES, value)
    return errors


def _label_value_errors(value: str) -> list[str]:
    errors = []
    if len(value) > LABEL_MAX:
        errors.append(_max_len(LABEL_MAX))
    if not _LABEL_VALUE.fullmatch(value):
        errors.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, "
                "'-', '_' or '.', and must start and end with an alphanumeric character",
                _LABEL_VALUE_FMT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errors


def annotations_size(annotations: dict[str, str]) -> int:
    """The size Kubernetes holds to ANNOTATIONS_MAX_BYTES: every key and value, in bytes."""
    return sum(len(key.encode()) + len(str(value).encode()) for key, value in annotations.items())
