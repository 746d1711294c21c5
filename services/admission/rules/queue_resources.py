"""Queue resource arithmetic as Volcano's queue webhook does it, with its number formats.

Used by `queues.py` for the hierarchy checks (a child never above its ancestors, children's
guarantees and deserved shares within the parent's). Volcano converts a resource list into
cpu milli-units, memory bytes, a pod count and milli-units of everything else, and prints sums
as `cpu 2000.00, memory 4294967296.00, nvidia.com/gpu 1000.00`; we do the same so that its
messages come out identical.
"""

from __future__ import annotations

from collections.abc import Mapping

from shared.domain.quantity import format_milli, parse_quantity

from .context import ResourceAmounts

Amounts = dict[str, float]


def volcano_amounts(resources: ResourceAmounts | None) -> Amounts:
    """The resource list as Volcano's scheduler Resource holds it (cpu and memory always)."""
    amounts: Amounts = {"cpu": 0.0, "memory": 0.0}
    for name, written in (resources or {}).items():
        value = parse_quantity(written)
        if name == "memory" or name == "pods":
            amounts[name] = amounts.get(name, 0.0) + float(-(-value // 1))
        else:
            amounts[name] = amounts.get(name, 0.0) + float(value * 1000)
    return amounts


def add(left: Amounts, right: Amounts) -> Amounts:
    return {name: left.get(name, 0.0) + right.get(name, 0.0) for name in left.keys() | right.keys()}


def below_somewhere(limit: Amounts, total: Amounts) -> bool:
    """Volcano's `LessPartly(..., Zero)`: is the limit short in any dimension of the total?
    A dimension the limit does not name counts as zero, so naming it at all exceeds it."""
    if limit["cpu"] < total["cpu"] or limit["memory"] < total["memory"]:
        return True
    scalars = set(total) - {"cpu", "memory"}
    if any(name not in limit for name in scalars):
        return True
    return any(limit[name] < total.get(name, 0.0) for name in set(limit) - {"cpu", "memory"})


def describe(amounts: Mapping[str, float]) -> str:
    """Volcano's `Resource.String()`: `cpu <milli>, memory <bytes>[, <name> <value>...]`."""
    text = f"cpu {amounts.get('cpu', 0.0):0.2f}, memory {amounts.get('memory', 0.0):0.2f}"
    for name in sorted(set(amounts) - {"cpu", "memory"}):
        text += f", {name} {amounts[name]:0.2f}"
    return text


def format_one(name: str, value: float) -> str:
    """One amount as Volcano prints it in capability messages: `4`, `500m`, `6Gi`, `2000.00`."""
    if name == "cpu":
        return format_milli(int(value))
    if name == "memory":
        return format_milli(int(value) * 1000, binary=True)
    return f"{value:.2f}"


def named(amounts: Amounts) -> list[str]:
    """The dimensions a capability really sets (Volcano skips amounts below 0.1)."""
    return [name for name, value in amounts.items() if value >= 0.1]
