"""Field errors returned by the admission rules, and how Volcano words a list of them.

Every rule returns `FieldError`s: the field path and reason become the `causes` of the
Kubernetes Status that `review.py` sends back; `text` is the exact wording Volcano's webhook
puts in the Status message for that error, so that kubectl prints what Volcano would print.
Volcano joins errors differently per object and operation, hence the `compose` styles.
kubectl prints only the Status message, so `with_causes` appends each error's field path and
rule to Volcano's text: a user sees where the object is wrong, not just Volcano's summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Reason = Literal[
    "FieldValueInvalid",
    "FieldValueRequired",
    "FieldValueDuplicate",
    "FieldValueNotSupported",
    "FieldValueForbidden",
    "FieldValueTooLong",
]

# How each reason reads in a message, as Kubernetes' own field errors word them.
REASON_WORDS: dict[str, str] = {
    "FieldValueInvalid": "invalid value",
    "FieldValueRequired": "required value",
    "FieldValueDuplicate": "duplicate value",
    "FieldValueNotSupported": "unsupported value",
    "FieldValueForbidden": "forbidden",
    "FieldValueTooLong": "too long",
}

MessageStyle = Literal["concat", "first", "aggregate", "join"]
"""How Volcano combines messages: job CREATE concatenates `text`s (each carries its own spacing
and `;`) and trims; job UPDATE reports only the first; queues report a Kubernetes aggregate
(`[a, b]` when more than one); PodGroups join with `; `."""


@dataclass(frozen=True, slots=True)
class FieldError:
    """One broken rule: where (`field`, a Kubernetes field path), what (`message`), which kind."""

    field: str
    message: str
    reason: Reason = "FieldValueInvalid"
    # Volcano's wording of this error inside the Status message; None means `message`.
    # An empty string means the wording is already part of the previous error's text.
    text: str | None = None

    @property
    def wording(self) -> str:
        return self.message if self.text is None else self.text

    def to_cause(self) -> dict[str, str]:
        """The error as a Kubernetes StatusCause."""
        return {"field": self.field, "message": self.message, "reason": self.reason}


def compose(errors: Sequence[FieldError], style: MessageStyle) -> str:
    """The Status message Volcano would return for these errors."""
    if not errors:
        return ""
    texts = [error.wording for error in errors if error.wording]
    if style == "concat":
        return "".join(texts).strip()
    if style == "first":
        return texts[0] if texts else errors[0].message
    if style == "aggregate":
        return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return "; ".join(text.strip() for text in texts)


def with_causes(message: str, errors: Sequence[FieldError]) -> str:
    """Volcano's `message`, unchanged, followed by one line per error: its field path and rule.

    Volcano's text stays first and whole, so whoever looks for it still finds it; the lines
    after it carry what `status.details.causes` carries, for clients that print only the message.
    """
    if not errors:
        return message
    lines = [f"  {error.field} ({REASON_WORDS[error.reason]}): {error.message}" for error in errors]
    return "\n".join([message, "causes:", *lines])


def go_invalid(field: str, value: object, detail: str) -> str:
    """Kubernetes' `field.Invalid(...).Error()` wording: `path: Invalid value: "v": detail`."""
    return f"{field}: Invalid value: {go_value(value)}: {detail}"


def go_value(value: object) -> str:
    """A value as Kubernetes' field errors print it: strings quoted, numbers bare."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def go_list(items: Sequence[object]) -> str:
    """A Go slice as `%v` prints it: `[a b c]`."""
    return "[" + " ".join(str(item) for item in items) + "]"
