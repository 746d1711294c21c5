"""What a chaos run does and when, drawn from one seed so a failing run can be replayed.

Pure: a seed and a duration in, two timelines out. Gangs are Volcano Jobs of 2 to 5 pods, all
needed (minAvailable = replicas), each pod running a few seconds on the simulator. Faults start
with one of every kind in a seeded order, so even a short run exercises each, then repeat in
fresh seeded rounds until the run's time is used up.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

SERVICES = ("watcher", "scheduler", "controller", "admission")
FAULT_KINDS = (
    *(f"kill:{service}" for service in SERVICES),
    "pause:scheduler",
    "restart:nats",
    "restart:postgres",
)
NAMESPACE = "default"
GANG_SIZES = (2, 3, 4, 5)
RUN_SECONDS = (2, 3, 5, 8)
CPUS = ("500m", "1", "2")


@dataclass(frozen=True)
class GangSubmission:
    at: float  # seconds from the start of the run
    name: str
    replicas: int
    cpu: str
    run_seconds: int

    def manifest(self) -> dict[str, Any]:
        pod_template = {
            "metadata": {"annotations": {"simulator.phalanx/run-seconds": str(self.run_seconds)}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "work",
                        "image": "busybox",
                        "resources": {"requests": {"cpu": self.cpu, "memory": "1Gi"}},
                    }
                ],
            },
        }
        return {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": self.name, "namespace": NAMESPACE},
            "spec": {
                "minAvailable": self.replicas,
                "schedulerName": "volcano",
                "tasks": [{"name": "worker", "replicas": self.replicas, "template": pod_template}],
            },
        }


@dataclass(frozen=True)
class FaultInjection:
    at: float
    kind: str  # one of FAULT_KINDS


def gangs(seed: int, duration: float, count: int) -> list[GangSubmission]:
    """`count` gangs at seeded instants within the first 90% of the run (the rest lets them finish)."""
    rng = random.Random(f"gangs-{seed}")
    instants = sorted(rng.uniform(0, duration * 0.9) for _ in range(count))
    return [
        GangSubmission(
            at=round(at, 3),
            name=f"chaos-{seed}-{index:04d}",
            replicas=rng.choice(GANG_SIZES),
            cpu=rng.choice(CPUS),
            run_seconds=rng.choice(RUN_SECONDS),
        )
        for index, at in enumerate(instants)
    ]


def faults(seed: int, duration: float, every: float) -> list[FaultInjection]:
    """Roughly one fault per `every` seconds, jittered, until 80% of the run; at least one of each."""
    if every <= 0:
        raise ValueError("the interval between faults (every) must be positive")
    rng = random.Random(f"faults-{seed}")
    plan: list[FaultInjection] = []
    at = every / 2
    while True:
        round_ = list(FAULT_KINDS)
        rng.shuffle(round_)
        for kind in round_:
            if at > duration * 0.8 and len(plan) >= len(FAULT_KINDS):
                return plan
            plan.append(FaultInjection(round(at, 3), kind))
            at += every * rng.uniform(0.5, 1.5)
