"""Issue #15's targets against one run's figures: met, or missed by how much (pure).

The report (report.py) hands in the measured figures by name and the machine's ceiling; this says,
per target, what was wanted, what was measured and by what factor it was missed. A throughput
target above what this machine can do at all (the ceiling, the same pods created and bound with
no Phalanx in between) is marked so: no scheduler could meet it here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

PODS_PER_S = "pods/s, first create → last bind"
ALL_BOUND_S = "first create → all bound"
CPU_MS_PER_POD = "CPU per pod, all processes"
P99_LATENCY_S = "p99 pod latency, created → bound"
PARTIAL_GANGS = "partially bound gangs"


@dataclass(frozen=True)
class Target:
    figure: str  # one of the names above
    wanted: float
    unit: str
    at_most: bool  # the figure must not exceed `wanted` (else: must reach it)


TARGETS: dict[str, tuple[Target, ...]] = {
    "s2": (
        Target(ALL_BOUND_S, 10.0, "s", at_most=True),
        Target(PODS_PER_S, 1000.0, "", at_most=False),
        Target(CPU_MS_PER_POD, 2.0, "ms", at_most=True),
        Target(P99_LATENCY_S, 2.0, "s", at_most=True),
        Target(PARTIAL_GANGS, 0.0, "", at_most=True),
    ),
    "s1": (
        Target(PODS_PER_S, 600.0, "", at_most=False),
        Target(CPU_MS_PER_POD, 3.0, "ms", at_most=True),
        Target(PARTIAL_GANGS, 0.0, "", at_most=True),
    ),
    "s2-10000x1": (
        Target(PODS_PER_S, 600.0, "", at_most=False),
        Target(PARTIAL_GANGS, 0.0, "", at_most=True),
    ),
}


def verdict(target: Target, measured: float, ceiling_pods_per_s: float | None) -> str:
    """`met`, or `missed: ...` with the factor, and for throughput what the machine allows."""
    if math.isnan(measured):
        return "not measured"
    met = measured <= target.wanted if target.at_most else measured >= target.wanted
    if met:
        return "met"
    if target.wanted == 0:
        return f"missed: {measured:g} {target.unit}".rstrip()
    if target.at_most:
        factor = measured / target.wanted
    else:
        factor = target.wanted / measured if measured else math.inf
    text = f"missed by a factor of {factor:.2f}" if factor < 2 else f"missed by a factor of {factor:.1f}"
    if target.figure == PODS_PER_S and ceiling_pods_per_s:
        if ceiling_pods_per_s < target.wanted:
            text += (
                f"; beyond this machine: its ceiling in this run was {ceiling_pods_per_s:,.0f} pods/s, "
                f"Phalanx reached {measured / ceiling_pods_per_s:.2f} of it"
            )
        else:
            text += f"; the ceiling in this run was {ceiling_pods_per_s:,.0f} pods/s"
    return text


def lines(
    scenario: str, measured: Mapping[str, float], ceiling_pods_per_s: float | None, *, scale: float = 1.0
) -> list[str]:
    """The results file's section on the issue's targets, or nothing for a scenario without any."""
    targets = TARGETS.get(scenario)
    if not targets:
        return []
    out = [
        "",
        "## Issue #15's targets",
        "",
    ]
    if scale != 1.0:
        out += [f"At {scale:g} of the scenario's size: the targets are for the full size.", ""]
    out += ["| target | wanted | measured | verdict |", "|---|---|---|---|"]
    for target in targets:
        value = measured.get(target.figure, math.nan)
        sign = "≤" if target.at_most else "≥"
        unit = f" {target.unit}" if target.unit else ""
        shown = "n/a" if math.isnan(value) else f"{value:,.2f}{unit}"
        out.append(
            f"| {target.figure} | {sign} {target.wanted:,g}{unit} | {shown} | "
            f"{verdict(target, value, ceiling_pods_per_s)} |"
        )
    return [*out, "", WHY]


# Where the reasons for a miss and the way to close it are kept: they change with the code, not
# with a run, so the results file points there rather than guessing.
WHY = (
    "Why a target is missed and what would close it: `docs/benchmarks.md`, "
    '"Where the targets stand, and what would close them". With `--profile`, the last section '
    "below says where each service's CPU went in this run."
)
