"""Benchmark of the simulated cluster: create, bind and watch-event throughput at scale.

    python -m benchmarks.simulator [--nodes 5000] [--pods 50000] [--watchers 10] [--write FILE]

Starts `python -m services.simulator` as its own process on a loopback port with the given
number of nodes, opens the watchers (every pod in every namespace), creates the pods, binds
each to a node through pods/binding, and waits until every watcher has seen every event (pod
ADDED, bound, Running). Requests go over keep-alive HTTP/1.1 connections from a minimal asyncio
client, so the figures measure the simulator rather than a client library. Bounded by
--timeout; it writes the figures with date, hardware and versions to --write (Markdown).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import orjson

REPOSITORY = Path(__file__).resolve().parents[1]
RESULTS = REPOSITORY / "benchmarks" / "results" / "simulator.md"


class Connection:
    """One keep-alive HTTP/1.1 connection; answers must carry Content-Length (the API's do)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2**24)
        return cls(reader, writer)

    async def request(self, method: str, path: str, body: object | None = None) -> tuple[int, bytes]:
        payload = orjson.dumps(body) if body is not None else b""
        self._writer.write(
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        status_line = await self._reader.readline()
        length = 0
        while (line := await self._reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        return int(status_line.split()[1]), await self._reader.readexactly(length)

    def close(self) -> None:
        self._writer.close()


@dataclass
class Watcher:
    expected: int
    seen: int = 0
    done: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, port: int, resource_version: str) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2**24)
        writer.write(
            f"GET /api/v1/pods?watch=true&resourceVersion={resource_version}"
            "&timeoutSeconds=3600 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
        )
        while await reader.readline() not in (b"\r\n", b""):
            pass
        # Chunked framing: a size line, the data, CRLF. Events are counted by their newlines.
        while self.seen < self.expected:
            size = int((await reader.readline()).strip(), 16)
            if size == 0:
                break
            self.seen += (await reader.readexactly(size + 2)).count(b"\n") - 1
        self.done.set()
        writer.close()


def pod(index: int) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"bench-{index}",
            "namespace": "default",
            "labels": {"app": "bench", "shard": str(index % 10)},
        },
        "spec": {
            "schedulerName": "volcano",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ],
        },
    }


async def run_all(connections: list[Connection], jobs: list[tuple[str, str, object]]) -> float:
    """Send the requests over the connections (one in flight on each); returns seconds taken."""
    queue = iter(jobs)
    failures: list[tuple[int, bytes]] = []

    async def worker(connection: Connection) -> None:
        for method, path, body in queue:
            status, answer = await connection.request(method, path, body)
            if status >= 300:
                failures.append((status, answer[:200]))

    started = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in connections))
    if failures:
        raise RuntimeError(f"{len(failures)} requests failed, first: {failures[0]}")
    return time.perf_counter() - started


async def benchmark(args: argparse.Namespace, port: int) -> dict[str, float]:
    connections = [await Connection.open(port) for _ in range(args.concurrency)]
    status, body = await connections[0].request("GET", "/api/v1/pods?limit=1")
    assert status == 200, body
    version = orjson.loads(body)["metadata"]["resourceVersion"]
    watchers = [Watcher(expected=3 * args.pods) for _ in range(args.watchers)]
    watching = [asyncio.ensure_future(w.run(port, version)) for w in watchers]
    await asyncio.sleep(0.5)
    started = time.perf_counter()
    create_seconds = await run_all(
        connections, [("POST", "/api/v1/namespaces/default/pods", pod(i)) for i in range(args.pods)]
    )
    bind_seconds = await run_all(
        connections,
        [
            (
                "POST",
                f"/api/v1/namespaces/default/pods/bench-{i}/binding",
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": f"bench-{i}"},
                    "target": {"kind": "Node", "name": f"node-{i % args.nodes}"},
                },
            )
            for i in range(args.pods)
        ],
    )
    await asyncio.wait_for(asyncio.gather(*(w.done.wait() for w in watchers)), args.timeout)
    all_seen = time.perf_counter() - started
    list_started = time.perf_counter()
    status, body = await connections[0].request("GET", "/api/v1/pods")
    list_seconds = time.perf_counter() - list_started
    running = sum(1 for p in orjson.loads(body)["items"] if p["status"]["phase"] == "Running")
    for connection in connections:
        connection.close()
    for task in watching:
        task.cancel()
    events = sum(w.seen for w in watchers)
    return {
        "creates_per_second": args.pods / create_seconds,
        "binds_per_second": args.pods / bind_seconds,
        "watch_events_delivered": events,
        "watch_events_per_second": events / all_seen,
        "seconds_until_watchers_saw_all": all_seen,
        "list_all_pods_seconds": list_seconds,
        "running_pods": running,
    }


def start_simulator(args: argparse.Namespace, directory: Path) -> tuple[subprocess.Popen[str], int, float]:
    nodes = directory / "nodes.yaml"
    nodes.write_text(f"- {{namePrefix: node-, count: {args.nodes}, cpu: '64', memory: 256Gi, pods: 110}}\n")
    started = time.perf_counter()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "services.simulator",
            "--port",
            "0",
            "--nodes",
            str(nodes),
            "--no-default-scheduler",
            "--kubelet-start-delay",
            str(args.start_delay),
            "--history-size",
            str(max(100, 3 * args.pods)),
        ],
        cwd=REPOSITORY,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("simulator: serving"):
        raise RuntimeError(f"the simulator did not start: {line!r}")
    return process, int(line.split()[2].rstrip(",").rsplit(":", 1)[1]), time.perf_counter() - started


def environment() -> str:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown",
    )
    versions = ", ".join(
        f"{name} {metadata.version(name)}" for name in ("uvicorn", "orjson", "httptools", "uvloop")
    )
    return (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {os.cpu_count()} CPUs ({model}); "
        f"Python {platform.python_version()} on {platform.system()} {platform.release()}; {versions}"
    )


def report(args: argparse.Namespace, figures: dict[str, float], startup: float) -> str:
    command = (
        f"python -m benchmarks.simulator --nodes {args.nodes} --pods {args.pods} "
        f"--watchers {args.watchers} --concurrency {args.concurrency}"
    )
    watched = f"{args.watchers} watchers x 3 events per pod"
    return f"""# Simulator benchmark

`{command}`

{environment()}.

The simulator runs as its own process (one core at most: asyncio + uvicorn); the
benchmark client (keep-alive HTTP/1.1, {args.concurrency} connections, one request in flight on
each, plus {args.watchers} watchers of every pod) shares the same machine. No write rate limit.

| figure | value |
|---|---|
| nodes created from the nodes file, process start to serving | {args.nodes} in {startup:.1f} s |
| pod creates per second | {figures["creates_per_second"]:,.0f} |
| pod binds (pods/binding) per second | {figures["binds_per_second"]:,.0f} |
| watch events delivered ({watched}) | {figures["watch_events_delivered"]:,.0f} |
| watch events delivered per second, all watchers | {figures["watch_events_per_second"]:,.0f} |
| from first create to every watcher having every event | {figures["seconds_until_watchers_saw_all"]:.1f} s |
| list of all {args.pods} pods | {figures["list_all_pods_seconds"]:.2f} s |
| pods Running at the end | {figures["running_pods"]:,.0f} |

Each pod yields three watch events: ADDED, MODIFIED (bound) and MODIFIED (Running after the
kubelet start delay of {args.start_delay} s).
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--watchers", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--start-delay", type=float, default=0.05)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--write", type=Path, default=None, help=f"write Markdown (e.g. {RESULTS})")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        process, port, startup = start_simulator(args, Path(directory))
        try:
            figures = asyncio.run(asyncio.wait_for(benchmark(args, port), args.timeout))
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
    text = report(args, figures, startup)
    print(text)
    if args.write:
        args.write.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
