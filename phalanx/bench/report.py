"""The results file of one benchmark run: when, on what, with which settings, and the figures,
as Markdown a reader can compare with the peers' published numbers."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

from phalanx.bench import breakdown, targets
from phalanx.bench.figures import Spread
from phalanx.bench.runner import Result
from phalanx.bench.topology import lines as topology_lines

SERVICES = ("simulator", "watcher", "admission", "controller", "scheduler", "nats", "postgres")


def file_name(result: Result) -> str:
    qps = f"-qps{result.settings.qps:g}" if result.settings.qps else ""
    return f"bench-{result.scenario.name}{qps}.md".replace("@", "-scaled-")


def _num(value: float, digits: int = 1) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:,.{digits}f}"


def _spread(spread: Spread | None) -> str:
    if spread is None:
        return "n/a"
    return f"{_num(spread.p50, 2)} / {_num(spread.p90, 2)} / {_num(spread.p99, 2)} / {_num(spread.max, 2)}"


def render(result: Result, *, when: datetime | None = None) -> str:
    f, scenario, settings = result.figures, result.scenario, result.settings
    when = when or datetime.now(UTC)
    pods = max(f.pods_bound, 1)
    lines = [
        f"# `phalanx bench {scenario.name}`" + (f" at {settings.qps:g} QPS" if settings.qps else ""),
        "",
        f"{scenario.summary}.",
        "",
        f"- Date: {when:%Y-%m-%d %H:%M} UTC",
        f"- Machine: {result.environment['cpu']}, {result.environment['cores']} cores, "
        f"{result.environment['memory']}; {result.environment['os']}",
        f"- Versions: Phalanx {result.environment['phalanx']}, Python {result.environment['python']}, "
        f"nats-server {result.environment['nats-server']}, PostgreSQL {result.environment['postgresql']}",
        f"- Settings: {scenario.nodes.count} nodes of {scenario.nodes.cpu} CPU / {scenario.nodes.memory} / "
        f"{scenario.nodes.pods} pods; pods request {scenario.cpu} CPU and {scenario.memory}; "
        f"{scenario.clients} concurrent clients; simulator write limit "
        f"{format(settings.qps, 'g') + ' QPS' if settings.qps else 'none'}; Volcano's benchmark scheduler "
        "profile (enqueue, allocate, backfill); every service one process on embedded defaults; "
        "the load generator on the same two cores.",
        "",
        "## Figures",
        "",
        "| figure | value |",
        "|---|---|",
        f"| pods created / bound (of {f.pods_expected}) | {f.pods_created} / {f.pods_bound} |",
        f"| create requests that failed | {result.create_failures} |",
        f"| first create → all pods exist | {_num(f.all_created_s, 2)} s |",
        f"| first create → all bound | {_num(f.all_bound_s, 2)} s |",
        f"| pods/s, binds ÷ (last bind - first bind) | {_num(f.pods_per_s_bind_window)} |",
        f"| pods/s, binds ÷ (last bind - first create) | {_num(f.pods_per_s_end_to_end)} |",
        f"| pods/s, mean of per-second samples | {_num(f.pods_per_s_sampled)} |",
        f"| pod latency created → bound, p50 / p90 / p99 / max | {_spread(f.pod_latency)} s |",
    ]
    if f.job_latency is not None:
        lines.append(
            f"| job latency created → last pod bound, p50 / p90 / p99 / max | {_spread(f.job_latency)} s |"
        )
    lines += [
        f"| gangs: whole / not placed / **partially bound** (of {f.gangs}) | "
        f"{f.gangs_whole} / {f.gangs_unplaced} / **{f.gangs_partial}** |",
    ]
    if f.gang_bind_spread is not None and scenario.replicas > 1:
        lines.append(
            f"| within a gang, first → last bind, p50 / p90 / p99 / max | {_spread(f.gang_bind_spread)} s |"
        )
    lines += _ceiling_lines(result)
    lines += _target_lines(result)
    if result.placement is not None and scenario.topology is not None:
        lines += topology_lines(result.placement, scenario.topology)
    lines += [
        "",
        "## Cost per bound pod",
        "",
        "| process | CPU s | CPU ms per pod |",
        "|---|---|---|",
    ]
    for name in SERVICES:
        if name in result.cpu_seconds:
            seconds = result.cpu_seconds[name]
            lines.append(f"| {name} | {_num(seconds, 2)} | {_num(seconds * 1000 / pods, 2)} |")
    total = sum(result.cpu_seconds.values())
    lines += [
        f"| all | {_num(total, 2)} | {_num(total * 1000 / pods, 2)} |",
        "",
        f"Scheduler peak resident memory (VmHWM): {_num(result.scheduler_peak_rss_mib or math.nan, 0)} MiB.",
        "",
        "| writes | total | per pod |",
        "|---|---|---|",
        f"| Kubernetes API (simulator) | {sum(result.api_writes.values())} | "
        f"{_num(sum(result.api_writes.values()) / pods, 2)} |",
        f"| JetStream messages stored | {result.jetstream_messages} | "
        f"{_num(result.jetstream_messages / pods, 2)} |",
        f"| PostgreSQL transactions | {result.postgres.transactions} | "
        f"{_num(result.postgres.transactions / pods, 2)} |",
        f"| PostgreSQL rows written | {result.postgres.rows_written} | "
        f"{_num(result.postgres.rows_written / pods, 2)} |",
        "",
        "API writes by request: "
        + ", ".join(
            f"{key} {count}" for key, count in sorted(result.api_writes.items(), key=lambda kv: -kv[1])
        ),
        "",
    ]
    lines += breakdown.report_lines(result.writes, pods)
    lines += service_metrics_lines(result.service_metrics)
    lines += hot_spot_lines(result.hot_spots)
    if result.notes:
        lines += ["## Notes", "", *(f"- {note}" for note in result.notes), ""]
    return "\n".join(lines)


def _ceiling_lines(result: Result) -> list[str]:
    """The machine's ceiling, measured after the stack stopped, and Phalanx's share of it."""
    ceiling = result.ceiling
    if ceiling is None:
        return []
    return [
        "",
        "## The machine's ceiling in this run",
        "",
        "The load generator created and bound the same pods itself, straight against a simulator of "
        "the same cluster, with no Phalanx in between (`phalanx/bench/ceiling.py`). The ratio "
        "compensates for a machine shared with other work: compare it across runs, not the pods/s.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| ceiling: pods created and bound / seconds | {ceiling.pods} / {_num(ceiling.seconds, 2)} s |",
        f"| ceiling: pods/s, binds ÷ (last bind - first create) | {_num(ceiling.pods_per_s)} |",
        f"| ceiling: CPU ms per pod, simulator / load generator | "
        f"{_num(ceiling.simulator_cpu_s * 1000 / max(ceiling.pods, 1), 2)} / "
        f"{_num(ceiling.generator_cpu_s * 1000 / max(ceiling.pods, 1), 2)} |",
        "| **Phalanx's pods/s as a fraction of the ceiling** | "
        f"**{_num(result.ceiling_ratio or math.nan, 2)}** |",
    ]


def _target_lines(result: Result) -> list[str]:
    f = result.figures
    pods = max(f.pods_bound, 1)
    measured = {
        targets.PODS_PER_S: f.pods_per_s_end_to_end,
        targets.ALL_BOUND_S: f.all_bound_s,
        targets.CPU_MS_PER_POD: sum(result.cpu_seconds.values()) * 1000 / pods,
        targets.P99_LATENCY_S: f.pod_latency.p99 if f.pod_latency is not None else math.nan,
        targets.PARTIAL_GANGS: float(f.gangs_partial),
    }
    base, _, factor = result.scenario.name.partition("@")
    ceiling = result.ceiling.pods_per_s if result.ceiling is not None else None
    return targets.lines(base, measured, ceiling, scale=float(factor or 1))


def hot_spot_lines(hot_spots: dict[str, list[tuple[str, float]]]) -> list[str]:
    """Where each service's CPU went while the load was measured (py-spy, with --profile)."""
    if not hot_spots:
        return []
    lines = [
        "## Where the CPU goes (py-spy)",
        "",
        "Each sample is charged to the deepest function of ours on its stack, so time in a library "
        "counts for the call that asked for it.",
        "",
        "| service | function | share of its samples |",
        "|---|---|---|",
    ]
    for service, spots in hot_spots.items():
        lines += [f"| {service} | {where} | {share:.0%} |" for where, share in spots]
    return [*lines, ""]


def service_metrics_lines(read: dict[str, float]) -> list[str]:
    """What the services' own /metrics counted over the run (nothing when they were not read)."""
    if not read:
        return []
    cycles = read.get("scheduler:volcano_e2e_scheduling_latency_milliseconds_count", 0.0)
    cycle_ms = read.get("scheduler:volcano_e2e_scheduling_latency_milliseconds_sum", 0.0)
    requests = read.get("controller:phalanx_kube_api_request_duration_seconds_count", 0.0)
    request_s = read.get("controller:phalanx_kube_api_request_duration_seconds_sum", 0.0)
    return [
        "## From the services' /metrics",
        "",
        "| figure | value |",
        "|---|---|",
        f"| scheduling cycles (volcano_e2e_scheduling_latency_milliseconds) | {int(cycles)} |",
        f"| mean cycle | {_num(cycle_ms / cycles if cycles else 0.0, 1)} ms |",
        f"| pods bound by decisions (phalanx_scheduler_placed_pods_total) | "
        f"{int(read.get('scheduler:phalanx_scheduler_placed_pods_total', 0.0))} |",
        "| back-pressure probes of the controller's backlog (phalanx_scheduler_backlog_probes_total) | "
        f"{int(read.get('scheduler:phalanx_scheduler_backlog_probes_total', 0.0))} |",
        "| controller's Kubernetes API requests (phalanx_kube_api_request_duration_seconds) | "
        f"{int(requests)} |",
        f"| mean controller API request | {_num(request_s * 1000 / requests if requests else 0.0, 1)} ms |",
        "| admission webhook calls (phalanx_admission_reviews_total) | "
        f"{int(read.get('admission:phalanx_admission_reviews_total', 0.0))} |",
        "| Events not written: queue full or spam (phalanx_controller_events_dropped_total) | "
        f"{int(read.get('controller:phalanx_controller_events_dropped_total', 0.0))} |",
        "",
    ]


def write(result: Result, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / file_name(result)
    path.write_text(render(result))
    return path
