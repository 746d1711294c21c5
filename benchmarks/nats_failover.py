"""Benchmark: how long publishing stops when a NATS cluster loses the leader of a stream.

    python -m benchmarks.nats_failover [--trials 5] [--write benchmarks/results/scaling-failover-nats.md]

Starts three local NATS servers joined by routes (shared.infra.nats_cluster, as
`phalanx up --scale nats=3`), makes the streams with three replicas as the bootstrap does, and
publishes decisions as the scheduler's identity does, one every 10 ms, each waiting for its
acknowledgement (at most 0.5 s, then retried with the same message id, as the outbox relay does).
In each trial the server leading the DECISIONS stream is SIGKILLed; measured are the time from
the kill to the next acknowledged publish (what a publisher sees: no acknowledgement means no
progress) and to the stream's new leader being reported. The killed server is then restarted
from its own configuration and the next trial waits until it is a current replica again.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import nats

from shared.bus import bootstrap, permissions
from shared.bus.nats import NatsBus
from shared.config import NatsSettings
from shared.infra import local, nats_auth, nats_cluster
from shared.messages import jobs, subjects
from shared.messages.envelope import new_event

SIZE = 3
PUBLISH_EVERY_S = 0.01
ACK_TIMEOUT_S = 0.5


@dataclass(frozen=True)
class Trial:
    killed: str
    publish_gap_s: float  # kill -> next acknowledged publish
    new_leader_s: float  # kill -> a new leader reported by stream info
    new_leader: str


async def _leader(url: str) -> str:
    client = await nats.connect(url.split(","), connect_timeout=2, max_reconnect_attempts=1)
    try:
        info = await client.jetstream(timeout=1).stream_info(subjects.DECISIONS_STREAM)
        return (info.cluster.leader if info.cluster else None) or ""
    finally:
        await client.close()


async def _current(url: str) -> bool:
    client = await nats.connect(url.split(","), connect_timeout=2, max_reconnect_attempts=1)
    try:
        info = await client.jetstream(timeout=1).stream_info(subjects.DECISIONS_STREAM)
    finally:
        await client.close()
    replicas = (info.cluster.replicas or []) if info.cluster else []
    return bool(info.cluster and info.cluster.leader) and all(r.current for r in replicas)


async def _publish_until_acked(bus: NatsBus, index: int) -> None:
    data = jobs.JobPhaseChanged(
        namespace="bench", name=f"j{index}", uid=f"u{index}", previous=None, phase="Running"
    )
    event = new_event(data, source="bench")
    while True:
        try:
            await asyncio.wait_for(bus.publish(subjects.decision("bench", data.name), event), ACK_TIMEOUT_S)
            return
        except Exception:  # no leader yet, or moving to another member: retry, same message id
            await asyncio.sleep(PUBLISH_EVERY_S)


async def _trial(
    servers: list[local.LocalServer], bootstrap_url: str, bus: NatsBus
) -> tuple[Trial, local.LocalServer]:
    leader = await _leader(bootstrap_url)
    victim = next(s for s in servers if s.name == leader)
    for index in range(50):  # warm: the path to the leader is in use when it dies
        await _publish_until_acked(bus, index)
    killed_at = time.monotonic()
    os.kill(victim.pid, signal.SIGKILL)
    await _publish_until_acked(bus, 10_000)
    gap = time.monotonic() - killed_at
    new_leader = ""
    while not new_leader or new_leader == leader:
        try:
            new_leader = await _leader(bootstrap_url)
        except Exception:
            await asyncio.sleep(0.05)
    elected = time.monotonic() - killed_at
    return Trial(leader, gap, elected, new_leader), victim


async def run(trials: int, folder: Path) -> list[Trial]:
    servers = nats_cluster.start_nats_cluster(folder, SIZE)
    try:
        secrets = nats_auth.passwords_for(folder)
        url = ",".join(s.url for s in servers)
        bootstrap_url = ",".join(
            f"nats://{permissions.BOOTSTRAP}:{secrets[permissions.BOOTSTRAP]}@{s.url.removeprefix('nats://')}"
            for s in servers
        )
        await bootstrap.create_streams(NatsSettings(url=bootstrap_url))
        settings = NatsSettings(
            url=url,
            user="scheduler",
            password=secrets["scheduler"],
            manage_streams=False,  # type: ignore[arg-type]
        )
        bus = await NatsBus.connect(settings, name="bench")
        results = []
        try:
            for _ in range(trials):
                trial, victim = await _trial(servers, bootstrap_url, bus)
                results.append(trial)
                print(
                    f"killed {trial.killed}: publishing resumed after {trial.publish_gap_s:.2f} s, "
                    f"{trial.new_leader} leads after {trial.new_leader_s:.2f} s",
                    flush=True,
                )
                revived = local.restart_nats(victim)
                servers[servers.index(victim)] = revived
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    try:
                        if await _current(bootstrap_url):
                            break
                    except Exception:
                        pass
                    await asyncio.sleep(0.2)
        finally:
            await bus.close()
        return results
    finally:
        local.stop_all(servers)


def render(trials: list[Trial]) -> str:
    gaps = [t.publish_gap_s for t in trials]
    elected = [t.new_leader_s for t in trials]
    load = os.getloadavg()[0]
    when = (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {os.cpu_count()} CPUs; "
        f"Python {platform.python_version()} on {platform.system()} {platform.release()}"
    )
    header = (
        "| trial | killed (the stream's leader) | kill → next acknowledged publish "
        "| kill → new leader reported | new leader |"
    )
    rows = "\n".join(
        f"| {i} | {t.killed} | {t.publish_gap_s:.2f} s | {t.new_leader_s:.2f} s | {t.new_leader} |"
        for i, t in enumerate(trials, start=1)
    )
    return f"""# NATS cluster failover: a stream leader SIGKILLed

`python -m benchmarks.nats_failover --trials {len(trials)}` (benchmarks/nats_failover.py)

{when}; the machine's 1-minute load average at the end: {load:.2f} (shared with other work).

Three local NATS servers joined by routes, every stream replicated three ways; a publisher with
the scheduler's identity sends one decision every 10 ms and waits for each acknowledgement (0.5 s,
then the same message is sent again, as the outbox relay retries). Each trial SIGKILLs the server
leading the DECISIONS stream, then restarts it and waits until it is a current replica again.

{header}
|---|---|---|---|---|
{rows}

| figure | value |
|---|---|
| publishing stopped for, median / worst | {statistics.median(gaps):.2f} s / {max(gaps):.2f} s |
| new leader reported after, median / worst | {statistics.median(elected):.2f} s / {max(elected):.2f} s |

Nothing acknowledged is lost with the server (R3: a publish is acknowledged once a majority has
it); a message sent twice across the failover lands once (its message id, within the streams'
two-minute duplicate window). Consumers resume from their acknowledged position on the new
leader; `tests/integration/foundation/test_nats_cluster.py` proves that, and
`tests/e2e/test_scaled_cluster.py` runs gangs through the same loss on a whole stack.
"""


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--write", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="phalanx-nats-failover-") as folder:
        trials = asyncio.run(run(args.trials, Path(folder)))
    text = render(trials)
    if args.write:
        args.write.write_text(text)
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])
