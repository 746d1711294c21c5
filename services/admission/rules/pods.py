"""Volcano's admission of pods: the job-disruption-budget annotations of pods that are ours.

Volcano's validating webhook for pods looks only at pods naming its scheduler; of those, a pod
that already names a PodGroup (`scheduling.k8s.io/group-name`: a Job's or an operator's pod) is
left to its PodGroup, and a plain pod may carry at most one of `volcano.sh/jdb-min-available` and
`volcano.sh/jdb-max-unavailable` (Volcano's keys: no `scheduling.` prefix), each a positive
integer or a percentage from 1% to 99%. The messages are Volcano's own. Every other
pod is allowed untouched (and the webhook is registered with failurePolicy Ignore, so an
admission outage never blocks a pod).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from shared.volcano.keys import JDB_MAX_UNAVAILABLE, JDB_MIN_AVAILABLE
from shared.volcano.objects import PodObject

from .context import AdmissionContext
from .errors import FieldError, MessageStyle

STYLE: MessageStyle = "first"
JDB_KEYS = (JDB_MIN_AVAILABLE, JDB_MAX_UNAVAILABLE)


def validate_pod_create(pod: Mapping[str, Any], ctx: AdmissionContext) -> list[FieldError]:
    view = PodObject(pod)
    annotations = view.annotations
    if view.scheduler_name != ctx.scheduler_name or view.group_name:
        return []
    present = [key for key in JDB_KEYS if key in annotations]
    for key in present:
        if (problem := _budget_problem(key, str(annotations[key]))) is not None:
            return [FieldError(f"metadata.annotations[{key}]", problem)]
    if len(present) > 1:
        listed = "[" + " ".join(JDB_KEYS) + "]"
        return [
            FieldError(
                "metadata.annotations",
                f"not allow configure multiple annotations <{listed}> at same time",
                "FieldValueForbidden",
            )
        ]
    return []


def _go_atoi(text: str) -> int | None:
    """strconv.Atoi: an optional sign and decimal digits, nothing else."""
    digits = text[1:] if text[:1] in "+-" else text
    return int(text) if digits.isascii() and digits.isdigit() else None


def _budget_problem(key: str, value: str) -> str | None:
    """Volcano's check of one budget (intstr: an integer, else a percentage string)."""
    number = _go_atoi(value)
    if number is not None:
        if number <= 0:
            return f"invalid value <{json.dumps(value)}> for {key}, it must be a positive integer"
        return None
    stripped = value.replace("%", "")
    percent = _go_atoi(stripped)
    if percent is None:
        return f"invalid value strconv.Atoi: parsing {json.dumps(stripped)}: invalid syntax for {key}"
    if percent <= 0 or percent >= 100:
        return (
            f"invalid value <{json.dumps(value)}> for {key}, "
            "it must be a valid percentage which between 1% ~ 99%"
        )
    return None
