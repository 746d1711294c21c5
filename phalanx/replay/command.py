"""`phalanx replay`: the command line of the trace replayer (registered by phalanx/cli.py)."""

from __future__ import annotations

from pathlib import Path
from random import Random

import typer


def replay(
    trace_file: Path = typer.Argument(..., help="A trace (JSON; benchmarks/traces/ has some)."),
    config: Path = typer.Option(
        None, "--config", help="volcano-scheduler.conf to schedule with (default: Volcano's default)."
    ),
    add_nodes: int = typer.Option(
        0, "--add-nodes", min=0, help="Nodes to add, like the trace's last group: what if there were more?"
    ),
    estimates: str = typer.Option(
        "trace",
        "--estimates",
        help="trace | exact | over:F | noisy:S | learned | none (see docs/backfill.md).",
    ),
    seed: int = typer.Option(1, "--seed", help="Draws the noisy estimates."),
) -> None:
    """Run a workload trace through the scheduling core in virtual time and report, per queue,
    utilization, waits by job size, makespan, the start-time predictions' error and how fairly the
    queues shared the cluster (docs/fairness.md)."""
    from phalanx.replay import engine, fairness, report, trace
    from services.scheduler.core import DEFAULT_CONF, ConfError, parse_conf

    try:
        loaded = trace.load(trace_file)
        conf = parse_conf(config.read_text()) if config is not None else DEFAULT_CONF
        engine.estimate_of(loaded.jobs[0], estimates, Random(seed))  # refuses an unknown mode
    except (trace.TraceError, ConfError, ValueError, OSError) as err:
        typer.echo(f"phalanx replay: {err}", err=True)
        raise typer.Exit(2) from err
    result = engine.run(loaded, conf, estimates=estimates, add_nodes=add_nodes, seed=seed)
    label = f"{config.name if config else 'default conf'}, estimates {estimates}"
    if add_nodes:
        label += f", {add_nodes} nodes added"
    typer.echo(report.render(result, report.figures(result), label))
    fair = fairness.measure(result)
    typer.echo(
        f"fairness (Jain's index of share over entitlement, first day): {fair.day_index:.3f},"
        f" hourly mean {fair.hourly_mean:.3f}"
    )


def register(app: typer.Typer) -> None:
    app.command("replay")(replay)
