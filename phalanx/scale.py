"""Pure: `phalanx up --scale NAME=N` (docker compose's word) read into how many of each to start.

`phalanx.stack.up` starts that many processes of a service, or that many NATS servers joined into
one cluster. A bad value is refused with the flag, the name and the rule, before anything starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# What may be scaled here, and how far: NATS needs a majority of its servers for JetStream, so an
# even count adds a server without adding a fault it survives.
LIMITS: Mapping[str, tuple[int, ...]] = {
    "nats": (1, 3, 5),
    "admission": tuple(range(1, 11)),
    # Controller replicas each have durables of their own, granted for numbers 0 to 15
    # (shared/bus/permissions.py); watchers and schedulers stand by, so a few are plenty.
    "controller": tuple(range(1, 17)),
    "watcher": tuple(range(1, 5)),
    "scheduler": tuple(range(1, 5)),
}


class ScaleError(ValueError):
    pass


def parse(values: Iterable[str]) -> dict[str, int]:
    """`["nats=3", "admission=2"]` -> `{"nats": 3, "admission": 2}`; names not given are left out."""
    counts: dict[str, int] = {}
    for value in values:
        name, sep, raw = value.partition("=")
        name = name.strip()
        if not sep or not raw.strip().isdigit():
            raise ScaleError(f"--scale {value!r}: expected NAME=COUNT, e.g. --scale nats=3")
        if name not in LIMITS:
            raise ScaleError(
                f"--scale {value!r}: {name!r} cannot be scaled here; scalable: {', '.join(LIMITS)}"
            )
        count = int(raw)
        if count not in LIMITS[name]:
            allowed = ", ".join(str(n) for n in LIMITS[name])
            raise ScaleError(f"--scale {value!r}: {name} takes {allowed}")
        counts[name] = count
    return counts


def replica_names(name: str, count: int) -> list[str]:
    """`admission`, `admission-2`, ...: the first keeps the service's name (logs, `restart`)."""
    return [name, *(f"{name}-{index}" for index in range(2, count + 1))]
