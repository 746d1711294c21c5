"""Counters read before and after a measured run: CPU seconds per process, writes to the
Kubernetes API (the simulator's audit), messages stored by JetStream, PostgreSQL's transaction and
row counts, and the services' own Prometheus counters (`service_counters`, from the same /metrics
that docs/observability.md lists). Each probe returns plain numbers so the runner can subtract them.
"""

from __future__ import annotations

import os
import re
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import nats
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as f:
        raw = f.read()
    # The command name is in parentheses and may hold spaces: split after the last ')'.
    return raw[raw.rindex(")") + 2 :].split()


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(_stat_fields(int(entry))[1])
            except (OSError, ValueError, IndexError):
                continue
            tree.setdefault(parent, []).append(int(entry))
    return tree


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, its live descendants and its reaped children.

    PostgreSQL runs a process per connection; the postmaster reaps backends that end, whose time
    then shows in its children's counters, so the sum covers the whole server.
    """
    tree = _children()
    total, stack = 0.0, [pid]
    while stack:
        current = stack.pop()
        try:
            fields = _stat_fields(current)
        except OSError:
            continue
        # Fields 14-17 of /proc/PID/stat (utime, stime, cutime, cstime), counted from `state` = 3.
        utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
        total += utime + stime + cutime + cstime
        stack.extend(tree.get(current, ()))
    return total / _TICKS


def cpu_by_name(pids: Mapping[str, int]) -> dict[str, float]:
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


def peak_rss_mib(pid: int) -> float | None:
    """The most resident memory the process has held (VmHWM), in MiB; None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


async def jetstream_messages(nats_url: str) -> dict[str, int]:
    """Messages ever stored per stream (the last sequence), so deletions by limits don't hide any."""
    client = await nats.connect(nats_url.split(","))  # one server, or every member of a cluster
    try:
        streams = await client.jetstream().streams_info()
        return {s.config.name or "?": s.state.last_seq for s in streams}
    finally:
        await client.close()


@dataclass(frozen=True)
class PostgresCounters:
    transactions: int
    rows_written: int


async def postgres_counters(database_url: str) -> PostgresCounters:
    """Committed transactions and rows inserted, updated or deleted in the stack's database."""
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            # Backends publish their counters when idle at most once a second; asking for a
            # snapshot cleared first makes this read see what has been flushed so far.
            await connection.execute(text("SELECT pg_stat_clear_snapshot()"))
            row = (
                await connection.execute(
                    text(
                        "SELECT xact_commit, tup_inserted + tup_updated + tup_deleted"
                        " FROM pg_stat_database WHERE datname = current_database()"
                    )
                )
            ).one()
            return PostgresCounters(int(row[0]), int(row[1]))
    finally:
        await engine.dispose()


# What the benchmark reads from the services' /metrics: (service, series), summed over labels.
SERVICE_SERIES = (
    ("scheduler", "volcano_e2e_scheduling_latency_milliseconds_count"),
    ("scheduler", "volcano_e2e_scheduling_latency_milliseconds_sum"),
    ("scheduler", "phalanx_scheduler_placed_pods_total"),
    ("scheduler", "phalanx_scheduler_backlog_probes_total"),
    ("controller", "phalanx_kube_api_request_duration_seconds_count"),
    ("controller", "phalanx_kube_api_request_duration_seconds_sum"),
    ("controller", "phalanx_controller_events_dropped_total"),
    ("admission", "phalanx_admission_reviews_total"),
)
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{.*\})? (\S+)$")


def parse_totals(text: str) -> dict[str, float]:
    """Each series of Prometheus text, summed over its labels."""
    totals: dict[str, float] = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match and not line.startswith("#"):
            totals[match.group(1)] = totals.get(match.group(1), 0.0) + float(match.group(2))
    return totals


def service_counters(health_ports: Mapping[str, int]) -> dict[str, float]:
    """`SERVICE_SERIES` as `<service>:<series>` from each service's /metrics (0 when absent)."""
    read: dict[str, float] = {}
    for service in {service for service, _ in SERVICE_SERIES}:
        port = health_ports.get(service)
        if not port:
            continue
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            totals = parse_totals(response.read().decode())
        for name, series in SERVICE_SERIES:
            if name == service:
                read[f"{service}:{series}"] = totals.get(series, 0.0)
    return read
