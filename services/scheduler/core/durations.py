"""Durations as volcano-scheduler.conf and annotations write them ("1h30m", "45s", bare seconds).

Read by the configuration (config.py), by the pod fields the shell reads (pod_fields.py) and by
plugins whose arguments are durations (preemption_cost.py).
"""

from __future__ import annotations

import re
from datetime import timedelta

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_duration(raw: object) -> timedelta | None:
    """A Go duration ("1h30m", "45s") as Volcano's sla-waiting-time is written; bare numbers are
    seconds. Anything else means no SLA (Volcano ignores an unparsable value too)."""
    if isinstance(raw, int | float):
        return timedelta(seconds=raw) if raw > 0 else None
    text = str(raw).strip()
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    unit = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    seconds = sum(float(n) * unit[u] for n, u in parts)
    return timedelta(seconds=seconds) if seconds > 0 else None
