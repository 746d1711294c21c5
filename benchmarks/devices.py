"""Benchmark of DRA in the scheduler: CEL selector matching and a cycle that allocates devices.

Run `.venv/bin/python -m benchmarks.devices` (`--nodes 1000 --gpus 8 --gangs 200 --size 4`). It
builds a cluster of identical nodes, each with `--gpus` devices of one driver (half the nodes
"a100", half "h100"), and pending gangs whose pods claim one A100 each through a class and request
selector, then measures:
- matching: one selector set (class + request) over every device, as the snapshot reader does once
  per slice version (services/scheduler/device_rows.py);
- the cycle: one `plan_cycle` placing the gangs with their devices, and the same cycle for the same
  pods asking for an extended resource `nvidia.com/gpu-a100` instead of a claim (no allocator).
Figures are recorded by hand in benchmarks/results/devices.md.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from datetime import UTC, datetime

from services.scheduler.core import (
    DEFAULT_CONF,
    GangInfo,
    NodeInfo,
    QueueInfo,
    Snapshot,
    TaskInfo,
    plan_cycle,
)
from services.scheduler.core.devices import ClaimNeed, DeviceInfo, DeviceRequest, matching_devices
from shared.domain.resources import Resources

NOW = datetime(2026, 1, 1, tzinfo=UTC)
DRIVER = "gpu.example.com"
CLASS_RESOURCE = "deviceclass.resource.kubernetes.io/gpus"
SELECTORS = (f'device.driver == "{DRIVER}"', f'device.attributes["{DRIVER}"].model == "a100"')


def devices(nodes: int, gpus: int, unique: bool = False) -> list[DeviceInfo]:
    return [
        DeviceInfo(
            DRIVER,
            f"node-{n}",
            f"gpu-{g}",
            f"node-{n}",
            {
                f"{DRIVER}/model": "a100" if n % 2 == 0 else "h100",
                **({f"{DRIVER}/uuid": f"GPU-{n}-{g}"} if unique else {}),
            },
            {f"{DRIVER}/memory": 80 * 2**30 * 1000},
        )
        for n in range(nodes)
        for g in range(gpus)
    ]


def snapshot(nodes: int, gpus: int, gangs: int, size: int, *, claims: bool) -> Snapshot:
    found = matching_devices(devices(nodes, gpus), SELECTORS) if claims else {}
    resource = CLASS_RESOURCE if claims else "nvidia.com/gpu-a100"
    node_infos = tuple(
        NodeInfo(
            f"node-{n}",
            Resources.parse(
                {
                    "cpu": "64",
                    "memory": "256Gi",
                    "pods": "110",
                    **({resource: str(gpus)} if n % 2 == 0 else {}),
                }
            ),
        )
        for n in range(nodes)
    )
    request = Resources.parse({"cpu": "4", "memory": "16Gi", "pods": "1", resource: "1"})
    gang_infos = []
    for g in range(gangs):
        tasks = []
        for i in range(size):
            name = f"job-{g}-{i}"
            need = (ClaimNeed("default", f"{name}-gpu", (DeviceRequest("gpu", "gpus", 1, False, found),)),)
            tasks.append(
                TaskInfo(
                    uid=name,
                    namespace="default",
                    name=name,
                    request=request,
                    device_claims=need if claims else (),
                )
            )
        gang_infos.append(
            GangInfo(
                uid=f"job-{g}",
                namespace="default",
                name=f"job-{g}",
                queue="default",
                min_member=size,
                created=NOW,
                tasks=tuple(tasks),
                phase="Inqueue",
            )
        )
    return Snapshot(nodes=node_infos, queues=(QueueInfo("default"),), gangs=tuple(gang_infos), now=NOW)


def measure_matching(all_devices: list[DeviceInfo], repeat: int, unique: bool) -> None:
    matching = []
    for _ in range(repeat):
        started = time.perf_counter()
        matching_devices(all_devices, SELECTORS)
        matching.append(time.perf_counter() - started)
    median = statistics.median(matching)
    kind = "every device distinct (uuid attribute)" if unique else "identical GPUs per model"
    print(f"matching, {kind}: {len(all_devices)} devices, median {median:.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--gangs", type=int, default=200)
    parser.add_argument("--size", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}")
    for unique in (False, True):
        measure_matching(devices(args.nodes, args.gpus, unique), args.repeat, unique)
    for claims in (True, False):
        times, placed = [], 0
        for _ in range(args.repeat):
            snap = snapshot(args.nodes, args.gpus, args.gangs, args.size, claims=claims)
            started = time.perf_counter()
            plan = plan_cycle(snap, DEFAULT_CONF)
            times.append(time.perf_counter() - started)
            placed = plan.placements
        label = "DRA claims" if claims else "extended resource"
        print(f"cycle with {label}: {placed} placements, median {statistics.median(times):.3f} s")


if __name__ == "__main__":
    main()
