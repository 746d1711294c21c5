"""A chaos run's outcome as text: the settings, the faults carried out, the oracle's figures and
every violation, in a form that reads the same on a terminal and in benchmarks/results/chaos.md."""

from __future__ import annotations

from phalanx.chaos.runner import ChaosResult


def render(result: ChaosResult) -> str:
    settings, verdict = result.settings, result.verdict
    scaled = ", ".join(f"{name}={count}" for name, count in settings.scale)
    lines = [
        f"seed {settings.seed}, {settings.gangs} gangs, a fault every ~{settings.fault_every_s:.0f} s, "
        f"timeline {settings.duration_s:.0f} s, run {result.wall_s:.0f} s",
        f"stack: {scaled or 'one of each service, one NATS server'}",
        "",
        "faults:",
        *(f"  {line}" for line in result.fault_log),
        "",
        "invariant figures (from the simulated API server's pod trace):",
        *(f"  {name}: {value}" for name, value in verdict.figures.items()),
        f"  longest partial gang across a controller restart (s): "
        f"{result.longest_across_controller_restart[1]:.3f} {result.longest_across_controller_restart[0]}",
        f"  sampled checks during the run: {result.samples}",
        "",
    ]
    if result.sampled_violations:
        lines += ["violations seen while running:", *(f"  {line}" for line in result.sampled_violations), ""]
    if verdict.violations:
        lines += [f"VIOLATIONS ({len(verdict.violations)}):"]
        lines += [f"  {v.invariant} {v.detail}" for v in verdict.violations[:50]]
    else:
        lines += [
            "no violation: I1 (one bind per pod), I2 (no node over-committed at any instant),",
            "I3 (no queue over its capability at any instant), I4 (no gang left partially bound),",
            "I5 (every job terminal, none lost), I6 (each pod created once, Scheduled at most once)",
            "and I7 (every bind within the recovery time after a fault healed) hold",
        ]
    return "\n".join(lines)
