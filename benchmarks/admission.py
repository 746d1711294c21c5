"""Benchmark of the admission webhook: AdmissionReview latency at a fixed, open-loop request rate.

    python -m benchmarks.admission [--rate 200] [--seconds 20] [--write FILE]

Starts a local PostgreSQL (migrated, with the `default` queue projected as the scheduler would),
a local NATS and the simulated API server (holding the `default` queue) in a temporary folder,
then `python -m services.admission` as its own process on loopback with webhook registration off.
Validating a Job's CREATE reads its queue from the API server (one GET), as in production. The client sends
AdmissionReviews over HTTPS (verified against the generated CA) on a fixed schedule, whatever the
answers' speed (open loop), so latency is measured from each request's planned start: a slow
answer delays no later request and is not hidden. The mix: Job mutate, valid Job validate and
invalid Job validate (two refusal rules). Bounded by --seconds plus a drain timeout; loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import orjson
from sqlalchemy import insert
from sqlalchemy.ext.asyncio import create_async_engine

from shared.infra import local
from shared.storage import tables
from shared.storage.migrate import upgrade

REPOSITORY = Path(__file__).resolve().parents[1]
RESULTS = REPOSITORY / "benchmarks" / "results" / "admission.md"
READY_TIMEOUT = 60.0
DRAIN_TIMEOUT = 15.0


def job(name: str, *, valid: bool) -> dict[str, Any]:
    task = {"replicas": 2, "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}}
    tasks = [{"name": "worker", **task}, {"name": "ps" if valid else "worker", **task}]
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        # Invalid ones break two rules: duplicated task name, gang larger than the replicas.
        "spec": {"minAvailable": 4 if valid else 5, "queue": "default", "tasks": tasks},
    }


def review(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "batch.volcano.sh", "version": "v1alpha1", "kind": "Job"},
            "resource": {"group": "batch.volcano.sh", "version": "v1alpha1", "resource": "jobs"},
            "name": obj["metadata"]["name"],
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "benchmark"},
            "object": obj,
        },
    }


# (path, valid job?, expected `allowed`) in turn: a third each.
MIX = (("/mutate", True, True), ("/validate", True, True), ("/validate", False, False))


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


async def one(session: aiohttp.ClientSession, index: int, planned: float, tally: Tally) -> None:
    path, valid, expected = MIX[index % len(MIX)]
    body = orjson.dumps(review(job(f"bench-{index}", valid=valid)))
    try:
        async with session.post(path, data=body, headers={"Content-Type": "application/json"}) as response:
            status, answer = response.status, await response.read()
    except (aiohttp.ClientError, TimeoutError) as error:
        tally.error(type(error).__name__)
        return
    done = time.perf_counter()
    if status != 200:
        tally.error(f"HTTP {status}")
    elif orjson.loads(answer)["response"]["allowed"] is not expected:
        tally.error(f"wrong answer on {path}")
    else:
        tally.latencies.append(done - planned)


async def load(port: int, ca: Path, rate: float, seconds: float) -> Tally:
    tally = Tally()
    context = ssl.create_default_context(cafile=str(ca))
    # aiohttp rather than httpx for the load: once a backlog forms, httpx's connection pool
    # bookkeeping grows with the connections open and the client, not the webhook, ran out of CPU.
    connector = aiohttp.TCPConnector(ssl=context, limit=256)
    async with aiohttp.ClientSession(
        f"https://127.0.0.1:{port}",
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=10.0),
        trust_env=False,
    ) as session:
        tasks: list[asyncio.Task[None]] = []
        start = time.perf_counter()
        total = int(rate * seconds)
        for index in range(total):
            planned = start + index / rate
            delay = planned - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(session, index, planned, tally)))
        _, pending = await asyncio.wait(tasks, timeout=DRAIN_TIMEOUT)
        for task in pending:
            task.cancel()
            tally.error("unanswered within the drain timeout")
    return tally


async def project_default_queue(database_url: str) -> None:
    # What the scheduler's ingester writes when it sees the controller's `default` queue.
    engine = create_async_engine(database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(
                insert(tables.Queue).values(name="default", weight=1, state="Open", reclaimable=True)
            )
    finally:
        await engine.dispose()


def start_simulator(workdir: Path) -> subprocess.Popen[bytes]:
    """The simulated API server, holding the `default` queue the benchmark's Jobs name."""
    port, kubeconfig = local.free_port(), workdir / "kubeconfig"
    log = (workdir / "simulator.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "services.simulator", "--port", str(port), "--kubeconfig", str(kubeconfig)],
        cwd=REPOSITORY,
        stdout=log,
        stderr=log,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"simulator exited:\n{(workdir / 'simulator.log').read_text()[-3000:]}")
        try:
            if kubeconfig.exists() and httpx.get(f"{url}/version", timeout=1.0).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "default"},
        "spec": {"weight": 1, "reclaimable": True},
    }
    created = httpx.post(
        f"{url}/apis/scheduling.volcano.sh/v1beta1/queues",
        json=queue,
        headers={"Authorization": "Bearer simulator"},
        timeout=10.0,
    )
    created.raise_for_status()
    return process


def start_admission(
    workdir: Path, nats_url: str, database_url: str
) -> tuple[subprocess.Popen[bytes], int, int]:
    port, health = local.free_port(), local.free_port()
    env = os.environ | {
        "ADMISSION_NATS__URL": nats_url,
        "ADMISSION_POSTGRES__URL": database_url,
        "ADMISSION_KUBECONFIG": str(workdir / "kubeconfig"),
        "ADMISSION_REGISTER_WEBHOOKS": "false",
        "ADMISSION_HOST": "127.0.0.1",
        "ADMISSION_PORT": str(port),
        "ADMISSION_HEALTH_PORT": str(health),
        "ADMISSION_CERT_DIR": str(workdir / "certs"),
        "ADMISSION_LOG__LEVEL": "WARNING",
    }
    log = (workdir / "admission.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "services.admission"], cwd=REPOSITORY, env=env, stdout=log, stderr=log
    )
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"admission exited:\n{(workdir / 'admission.log').read_text()[-3000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{health}/readyz", timeout=1.0).status_code == 200:
                return process, port, health
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    process.terminate()
    raise SystemExit("admission never became ready")


def server_side(health_port: int) -> dict[float, int]:
    """The webhook's own answer-time histogram (both paths): answers within each bound, cumulative.

    It counts from the request reaching the handler to the answer, so unlike the client's
    figures it does not grow when the client is starved of CPU.
    """
    text = httpx.get(f"http://127.0.0.1:{health_port}/metrics", timeout=5.0).text
    within: dict[float, int] = {}
    for line in text.splitlines():
        if line.startswith("phalanx_admission_review_seconds_bucket{"):
            bound = line.partition('le="')[2].partition('"')[0]
            value = float(bound) if bound != "+Inf" else float("inf")
            within[value] = within.get(value, 0) + int(float(line.rpartition(" ")[2]))
    return dict(sorted(within.items()))


def server_p99(within: dict[float, int]) -> str:
    total = within.get(float("inf"), 0)
    if not total:
        return "-"
    bound = next(b for b, n in within.items() if n >= 0.99 * total)
    return f"at most {1000 * bound:g} ms"


def percentile(sorted_values: list[float], fraction: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            return line.partition(":")[2].strip()
    return platform.processor() or "unknown CPU"


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (Linux), to tell saturation from contention."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report(
    tally: Tally,
    rate: float,
    seconds: float,
    load_before: float,
    cpu: tuple[float, float],
    within: dict[float, int],
) -> str:
    server_cpu, client_cpu = cpu
    values = sorted(tally.latencies)
    ms = [f"{1000 * percentile(values, f):.1f} ms" for f in (0.5, 0.9, 0.99, 1.0)] if values else ["-"] * 4
    errors = ", ".join(f"{k}: {v}" for k, v in sorted(tally.errors.items())) or "none"
    versions = ", ".join(f"{p} {metadata.version(p)}" for p in ("uvicorn", "starlette", "aiohttp", "asyncpg"))
    return "\n".join(
        [
            "# Admission webhook benchmark",
            "",
            f"`python -m benchmarks.admission --rate {rate:g} --seconds {seconds:g}`",
            "",
            f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {os.cpu_count()} CPUs ({cpu_name()}); "
            f"Python {platform.python_version()} on {platform.system()} {platform.release()}; {versions}.",
            "",
            "The webhook runs as its own process (`python -m services.admission`, registration off)",
            "against a local PostgreSQL, NATS and the simulated API server (each valid-or-not Job",
            "CREATE validation reads its queue there: one GET); the open-loop HTTPS client shares",
            "the machine.",
            "Latency counts from each request's planned start, so queueing in the client is included.",
            "Mix, in turn: Job mutate, valid Job validate, invalid Job validate (refused).",
            f"The machine's 1-minute load average before the run: {load_before:.2f} (it may be shared).",
            "",
            "| figure | value |",
            "|---|---|",
            f"| requests planned | {int(rate * seconds):,} at {rate:g}/s for {seconds:g} s |",
            f"| answered as expected | {len(values):,} |",
            f"| p50 latency | {ms[0]} |",
            f"| p90 latency | {ms[1]} |",
            f"| p99 latency | {ms[2]} |",
            f"| max latency | {ms[3]} |",
            f"| errors | {errors} |",
            f"| webhook process CPU while loaded | {server_cpu:.1f} s "
            f"({100 * server_cpu / seconds:.0f} % of one core) |",
            f"| benchmark client CPU (HTTPS, aiohttp) | {client_cpu:.1f} s |",
            f"| webhook's own p99 answer time (its histogram's bucket) | {server_p99(within)} |",
            f"| webhook answers within 25 ms (its histogram) | "
            f"{within.get(0.025, 0):,} of {within.get(float('inf'), 0):,} |",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=200.0, help="requests per second")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long to send for")
    parser.add_argument("--write", type=Path, default=RESULTS, help="Markdown file for the figures")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="phalanx-bench-admission-") as tmp:
        workdir = Path(tmp)
        servers = [local.start_postgres(workdir / "postgres"), local.start_nats(workdir / "nats")]
        admission: subprocess.Popen[bytes] | None = None
        simulator: subprocess.Popen[bytes] | None = None
        try:
            postgres, nats = servers
            upgrade(postgres.url)
            asyncio.run(project_default_queue(postgres.url))
            simulator = start_simulator(workdir)
            admission, port, health = start_admission(workdir, nats.url, postgres.url)
            cpu_before, client_before = cpu_seconds(admission.pid), time.process_time()
            tally = asyncio.run(load(port, workdir / "certs" / "ca.crt", args.rate, args.seconds))
            cpu = (cpu_seconds(admission.pid) - cpu_before, time.process_time() - client_before)
            within = server_side(health)
        finally:
            for process in (admission, simulator):
                if process is not None:
                    process.terminate()
                    try:
                        process.wait(timeout=15)
                    except subprocess.TimeoutExpired:
                        process.kill()
            for server in reversed(servers):
                local.stop(server)
    text = report(tally, args.rate, args.seconds, load_before, cpu, within)
    args.write.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
