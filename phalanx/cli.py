"""`phalanx` — the one command a user types.

phalanx up / down                 the whole system on embedded defaults
phalanx infra up / down / status  only NATS and PostgreSQL, as local processes
phalanx migrate                   apply the schema to PHALANX_DATABASE_URL
phalanx simulator                 the simulated cluster alone
phalanx scenario run FILE...      run scenarios against the whole stack
phalanx events watch              the audit stream: the last hour, then live
phalanx bench NAME...             end-to-end scheduling benchmarks (results in benchmarks/results)
phalanx chaos                     a seeded soak under faults, judged by the invariant oracle
phalanx job|queue ...             vcctl's commands, and `job why` / `queue why` (phalanx/vcctl)
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

import typer
from rich.console import Console

from phalanx.chaos.command import register as register_chaos
from phalanx.help_format import hide_flag_types
from phalanx.replay.command import register as register_replay
from phalanx.vcctl.app import register as register_vcctl
from shared.infra import local

hide_flag_types()
app = typer.Typer(
    help="Phalanx: Volcano-compatible gang scheduling over NATS and PostgreSQL.", no_args_is_help=True
)
infra = typer.Typer(
    help="Local NATS (JetStream) and PostgreSQL processes, without Docker.", no_args_is_help=True
)
app.add_typer(infra, name="infra")
register_vcctl(app)
register_chaos(app)
register_replay(app)
console = Console(soft_wrap=True)

STATE_DIR = typer.Option(Path(".phalanx"), "--state-dir", help="Where state, logs and pids live.")


@infra.command("up")
def infra_up(state_dir: Path = STATE_DIR) -> None:
    """Start NATS and PostgreSQL (unless already running for STATE_DIR) and print their URLs."""
    from shared.bus.bootstrap import create_streams
    from shared.bus.permissions import BOOTSTRAP
    from shared.config import NatsSettings
    from shared.infra import nats_auth, passwords, provision
    from shared.storage import migrate
    from shared.storage.roles import MIGRATOR

    state_dir = state_dir.resolve()
    servers = local.up(state_dir)
    postgres = next(s for s in servers if s.name == "postgres")
    nats = next(s for s in servers if s.name == "nats")
    owner = provision.local_postgres_roles(postgres.url, state_dir)[MIGRATOR]
    migrate.upgrade(passwords.with_user(postgres.url, *owner))
    bootstrap = nats_auth.passwords_for(state_dir)[BOOTSTRAP]
    asyncio.run(create_streams(NatsSettings(url=passwords.with_user(nats.url, BOOTSTRAP, bootstrap))))
    for server in servers:
        shown = passwords.without_user(server.url)
        console.print(f"[bold]{server.name}[/bold] {shown}  (pid {server.pid}, log {server.log_path})")
    console.print(
        f"\nBoth servers ask for credentials: {state_dir / 'nats-users.json'} (NATS, one user per"
        f" service) and {state_dir / 'postgres-users.json'} (PostgreSQL roles phalanx_<service>)."
    )


@infra.command("down")
def infra_down(state_dir: Path = STATE_DIR) -> None:
    """Stop the processes `infra up` started for STATE_DIR."""
    for server in local.down(state_dir.resolve()):
        console.print(f"stopped {server.name} (pid {server.pid})")


@infra.command("status")
def infra_status(state_dir: Path = STATE_DIR) -> None:
    servers = local.load(state_dir.resolve())
    if not servers:
        console.print("nothing running")
    for server in servers:
        alive = "running" if local.is_alive(server.pid) else "gone"
        console.print(f"{server.name} {server.url} pid {server.pid} {alive}")


@app.command()
def up(
    state_dir: Path = STATE_DIR,
    detach: bool = typer.Option(False, "--detach", "-d", help="Return once everything is ready."),
    nodes: Path = typer.Option(None, "--nodes", help="A YAML list of simulated nodes (default: 4 nodes)."),
    scheduler_conf: Path = typer.Option(None, "--scheduler-conf", help="A volcano-scheduler.conf file."),
    scale: list[str] = typer.Option(
        [],
        "--scale",
        help="NAME=COUNT, repeatable, as in docker compose: controller=3 runs three controller "
        "replicas sharing the jobs by shard, watcher=2 and scheduler=2 a standby each; nats=3 runs "
        "a cluster of three NATS servers with every stream replicated three ways; admission=2 runs "
        "two webhook replicas behind one registration, sharing one certificate (docs/scaling.md).",
    ),
    topology: str = typer.Option(
        None,
        "--topology",
        help="Racks and spines over the nodes, as HyperNodes: e.g. nodes=64,racks=16,spines=4 "
        "(docs/topology.md).",
    ),
) -> None:
    """Run the whole system on embedded defaults: NATS, PostgreSQL, the simulator, the services."""
    import signal
    import time

    from phalanx import next_steps, progress
    from phalanx import scale as scaling
    from phalanx import stack as stacks
    from phalanx import topology as topologies

    try:
        counts = scaling.parse(scale)
    except scaling.ScaleError as error:
        console.print(f"[red]{error}[/red]")
        raise typer.Exit(2) from None

    here = next_steps.caller_dir()
    try:
        spec = topologies.parse_topology(topology) if topology else None
        if spec is not None:
            nodes = topologies.write_nodes_file(spec, nodes, state_dir)
    except topologies.TopologyError as error:
        raise typer.BadParameter(str(error), param_hint="--topology") from None
    console.print("Starting NATS, PostgreSQL, the simulated cluster, the four services and the web console:")
    try:
        with progress.shown(console) as steps:
            running = stacks.up(
                state_dir, nodes_file=nodes, scheduler_conf=scheduler_conf, steps=steps, scale=counts
            )
        if spec is not None:
            topologies.enable_discovery(spec, Path(running.kubeconfig), running.simulator_url)
    except RuntimeError as error:
        console.print(f"[red]could not start:[/red] {error}")
        stacks.down(state_dir)
        raise typer.Exit(1) from None
    console.print(next_steps.ready_text(running, state_dir, detached=detach, here=here))
    if detach:
        return
    stop = False

    def interrupted(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    try:
        while not stop:
            time.sleep(0.5)
    finally:
        console.print("stopping ...")
        console.print(f"stopped: {', '.join(stacks.down(state_dir))}")


@app.command()
def status(state_dir: Path = STATE_DIR) -> None:
    """Every process `phalanx up` started, each replica on its own line: pid, health, log."""
    from phalanx import stack as stacks
    from phalanx import stack_status

    running = stacks.Stack.load(state_dir.resolve())
    if running is None:
        console.print("nothing is running (no stack.json in the state folder)")
        raise typer.Exit(1)
    for process, health in stack_status.status(running):
        port = f"health :{process.health_port}" if process.health_port else "no health port"
        console.print(
            f"{process.name:<14} pid {process.pid:<8} {port:<18} {health:<12} log {process.log_path}"
        )


@app.command()
def down(state_dir: Path = STATE_DIR) -> None:
    """Stop everything `phalanx up --detach` started."""
    from phalanx import stack as stacks

    stopped = stacks.down(state_dir)
    console.print(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")


@app.command()
def migrate(
    url: str = typer.Option(None, envvar="PHALANX_DATABASE_URL", help="postgresql+asyncpg://..."),
    downgrade: bool = typer.Option(False, help="Revert everything (to base) instead."),
) -> None:
    """Apply the schema (alembic upgrade head)."""
    from shared.storage import migrate as migrations

    if not url:
        raise typer.BadParameter("set PHALANX_DATABASE_URL or pass --url", param_hint="--url")
    (migrations.downgrade if downgrade else migrations.upgrade)(url)
    console.print("schema at base" if downgrade else "schema at head")


scenario = typer.Typer(
    help="Scenarios: a cluster, steps and expectations (docs/scenarios.md).", no_args_is_help=True
)
app.add_typer(scenario, name="scenario")


@scenario.command("run")
def scenario_run(
    files: list[Path] = typer.Argument(..., exists=True, help="Scenario files or folders of them."),
    state_dir: Path = STATE_DIR,
    kubeconfig: Path = typer.Option(None, "--kubeconfig", help="Default: STATE_DIR/kubeconfig."),
) -> None:
    """Run scenarios, each on a fresh cluster; exit 1 if any fails.

    Uses the stack `phalanx up` runs for STATE_DIR, or starts one for the run and stops it after.
    """
    from phalanx import progress
    from phalanx import stack as stacks
    from phalanx.scenario import ExternalStack, StackError, run_files

    started = None
    with progress.shown(console) as steps:
        if kubeconfig is None and stacks.Stack.load(state_dir.resolve()) is None:
            state_dir = Path(tempfile.mkdtemp(prefix="phalanx-scenario-"))
            steps.say(f"no stack is running; starting one in {state_dir}")
            started = stacks.up(state_dir, steps=steps)
        try:
            try:
                stack = ExternalStack(state_dir.resolve(), kubeconfig=kubeconfig)
            except StackError as error:
                console.print(f"[red]{error}[/red]")
                raise typer.Exit(2) from None
            ok = run_files(files, stack, emit=steps.say, shown=steps).ok
        finally:
            if started is not None:
                steps.step("stopping the stack")
                stacks.down(state_dir)
    raise typer.Exit(0 if ok else 1)


events = typer.Typer(help="The audit stream: every decision of every service.", no_args_is_help=True)
app.add_typer(events, name="events")


@events.command("watch")
def events_watch(
    since: str = typer.Option(
        "1h",
        "--since",
        metavar="WHEN",
        help="Start this far back (10m, 2h, 1d), at an ISO time, or 'now' (live only).",
    ),
    job: str = typer.Option(
        None, "--job", metavar="NAME", help="Only this job (NAME or NAMESPACE/NAME) and its PodGroup."
    ),
    queue: str = typer.Option(
        None, "--queue", metavar="NAME", help="Only the jobs and gangs of this queue, and the queue."
    ),
    type_: str = typer.Option(
        None, "--type", metavar="GLOB", help="Only <service>.<action> matching this glob, e.g. 'scheduler.*'."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="One CloudEvent per line, with its stream position as 'sequence'."
    ),
    after: int = typer.Option(
        None, "--after", min=0, metavar="SEQUENCE", help="Start after this stream position ('sequence')."
    ),
    position_file: Path = typer.Option(
        None,
        "--position-file",
        metavar="FILE",
        help="Continue where the last run with this file stopped, and record it.",
    ),
    nats_url: str = typer.Option(None, envvar="PHALANX_NATS_URL", help="Default: the stack of STATE_DIR."),
    state_dir: Path = STATE_DIR,
    idle_exit: float = typer.Option(None, "--idle-exit", help="Stop after this many seconds without events."),
) -> None:
    """Show what happened recently (the last hour), then follow new events as they happen."""
    import sys
    from datetime import UTC, datetime

    from phalanx import events as audit
    from phalanx import stack as stacks
    from phalanx.event_lines import Selection

    if not nats_url:
        running = stacks.Stack.load(state_dir.resolve())
        if running is None:
            raise typer.BadParameter(
                f"no stack runs for --state-dir {state_dir}; start one (phalanx up) or pass --nats-url",
                param_hint="--nats-url",
            )
        nats_url = running.auditor_nats_url or running.nats_url
    try:
        start_time = audit.parse_since(since, datetime.now(UTC))
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--since") from None
    described = f"in the last {since}" if start_time and since[-1].isalpha() else f"since {since}"
    start = audit.Start(
        since=start_time,
        after=after,
        position_file=position_file,
        described=described if start_time else "from now on",
    )
    audit.run(
        nats_url,
        start=start,
        selection=Selection(type_glob=type_, job=job, queue=queue),
        emit=lambda text: print(text, flush=True),
        notice=lambda text: print(text, file=sys.stderr, flush=True),
        as_json=as_json,
        stop_after_idle=idle_exit,
    )


@app.command()
def bench(
    names: list[str] = typer.Argument(
        ...,
        help="Scenarios: s1, s2, s2-10000x1, s2-500x20, s2-20x500, s2-contended, topo, topo-flat, "
        "topo-nobinpack.",
    ),
    qps: float = typer.Option(
        None, "--qps", min=1, help="The simulated API's write limit (e.g. 5000); default none."
    ),
    scale: float = typer.Option(
        1.0, "--scale", min=0.001, max=1.0, help="Shrink nodes and pods by this factor for a quick look."
    ),
    out: Path = typer.Option(Path("benchmarks/results"), "--out", help="Where the results files go."),
    timeout: float = typer.Option(600.0, "--timeout", help="Seconds to wait for the pods to be bound."),
    keep: bool = typer.Option(False, "--keep", help="Leave the stack running afterwards."),
    profile: Path = typer.Option(None, "--profile", help="Write py-spy profiles of every service here."),
    stall: float = typer.Option(
        30.0,
        "--stall",
        help="End the wait after this long without a new bind (more on a loaded machine).",
    ),
    ceiling: bool = typer.Option(
        True, "--ceiling/--no-ceiling", help="Also measure the machine's ceiling for the load, after the run."
    ),
) -> None:
    """Run the whole stack against the simulator, create a scenario's load and record the figures."""
    from phalanx import progress
    from phalanx.bench import report, runner, workloads

    unknown = [name for name in names if name not in workloads.SCENARIOS]
    if unknown:
        raise typer.BadParameter(
            f"unknown scenario {unknown[0]!r}; known: {', '.join(workloads.SCENARIOS)}", param_hint="NAMES"
        )
    settings = runner.RunSettings(
        qps=qps,
        scale=scale,
        timeout_s=timeout,
        keep_stack=keep,
        profile_dir=profile,
        ceiling=ceiling,
        stall_s=stall,
    )
    for name in names:
        scenario = workloads.scaled(workloads.SCENARIOS[name], scale)
        console.print(f"[bold]{name}[/bold]: {scenario.measured_pods} pods on {scenario.nodes.count} nodes")
        with progress.shown(console) as steps:
            result = runner.run(scenario, settings, say=steps.say, steps=steps)
        path = report.write(result, out)
        console.print(report.render(result))
        console.print(f"[bold]written to {path}[/bold]")


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True}, add_help_option=False
)
def simulator(ctx: typer.Context) -> None:
    """The simulated cluster alone: --port PORT --kubeconfig FILE [--nodes FILE] (see --help)."""
    from services.simulator.__main__ import main as simulator_main

    raise typer.Exit(simulator_main(list(ctx.args)))


def main() -> None:
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    app()


if __name__ == "__main__":
    main()
