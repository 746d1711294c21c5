"""Pure: Phalanx's runtime-estimate annotation, read alike by admission (which refuses a bad one)
and the scheduler (which plans with a good one; services/scheduler/core/estimates.py).

`phalanx.io/expected-runtime` on a Volcano Job or PodGroup is a Go duration ("2h30m", "90s",
"1.5h") or a plain number of seconds; it must be more than zero.
"""

from __future__ import annotations

import re

EXPECTED_RUNTIME = "phalanx.io/expected-runtime"
RULE = 'a duration such as "2h30m" or "90s", or a number of seconds, more than zero'

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def runtime_seconds(raw: object) -> float | None:
    """The estimate in seconds, or None when `raw` is not one (see RULE)."""
    text = str(raw).strip()
    try:
        seconds = float(text)
    except ValueError:
        parts = _PART.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            return None
        seconds = sum(float(n) * _UNIT[u] for n, u in parts)
    return seconds if seconds > 0 and seconds != float("inf") else None


def annotation_error(annotations: object) -> str | None:
    """What is wrong with the annotation in `annotations` (metadata.annotations), or None."""
    if not isinstance(annotations, dict) or EXPECTED_RUNTIME not in annotations:
        return None
    value = annotations[EXPECTED_RUNTIME]
    if runtime_seconds(value) is None:
        return f"{EXPECTED_RUNTIME} must be {RULE}, not {str(value)!r}"
    return None
