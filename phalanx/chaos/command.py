"""`phalanx chaos`: the command line of the soak (registered on the main app by phalanx/cli.py)."""

from __future__ import annotations

from pathlib import Path

import typer


def chaos(
    seed: int = typer.Option(
        1, "--seed", help="Draws the gangs and the faults; the same seed replays the run."
    ),
    duration: float = typer.Option(
        600.0, "--duration", min=30, help="Seconds of the timeline (gangs and faults)."
    ),
    gangs: int = typer.Option(40, "--gangs", min=1, help="How many gang jobs to submit over the timeline."),
    fault_every: float = typer.Option(30.0, "--fault-every", min=5, help="Mean seconds between faults."),
    settle: float = typer.Option(
        300.0, "--settle", min=10, help="Seconds every job may take to finish after."
    ),
    scale: list[str] = typer.Option(
        [],
        "--scale",
        help="NAME=COUNT, repeatable, as `phalanx up --scale` takes it: soak a scaled stack, e.g. "
        "--scale controller=3 --scale nats=3. A service's faults then hit its first replica, and a "
        "NATS restart or pause its first server (docs/scaling.md).",
    ),
    state_dir: Path = typer.Option(None, "--state-dir", help="Keep the stack's state and logs here."),
    out: Path = typer.Option(None, "--out", help="Also write the report to this file."),
) -> None:
    """Soak the whole stack: seeded gangs under seeded SIGKILLs, a paused scheduler and NATS and
    PostgreSQL restarts, then check the invariants from the simulated API server's own trace.
    Exits 1 when any invariant was violated."""
    from phalanx import scale as scaling
    from phalanx.chaos import report, runner  # the stack's imports only when a soak runs

    try:
        counts = scaling.parse(scale)
    except scaling.ScaleError as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(2) from None
    settings = runner.ChaosSettings(
        seed=seed,
        duration_s=duration,
        gangs=gangs,
        fault_every_s=fault_every,
        settle_s=settle,
        state_dir=state_dir,
        scale=tuple(sorted(counts.items())),
    )
    result = runner.run(settings, say=lambda line: typer.echo(line))
    text = report.render(result)
    typer.echo("\n" + text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")
    if not result.verdict.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("chaos")(chaos)
