"""What a chaos run does and when, drawn from one seed so a failing run can be replayed.

Pure: a seed and a duration in, two timelines out. Gangs are Volcano Jobs of 2 to 5 pods, all
needed (minAvailable = replicas), each pod running a few seconds on the simulator; every third
goes to a queue with a capability far below the cluster (`CAPPED_QUEUE`), so the queue's limit is
under test too (I3). Faults start with one of every kind in a seeded order, so even a short run
exercises each, then repeat in fresh seeded rounds until the run's time is used up. Every part is
both killed (SIGKILL, or a restart for NATS and PostgreSQL) and paused (SIGSTOP past the
scheduler's lease, then SIGCONT).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

SERVICES = ("watcher", "scheduler", "controller", "admission")
SERVERS = ("nats", "postgres")
FAULT_KINDS = (
    *(f"kill:{service}" for service in SERVICES),
    *(f"restart:{server}" for server in SERVERS),
    *(f"pause:{part}" for part in (*SERVICES, *SERVERS)),
)
NAMESPACE = "default"
GANG_SIZES = (2, 3, 4, 5)
RUN_SECONDS = (2, 3, 5, 8)
CPUS = ("500m", "1", "2")
# A queue that holds at most 6 CPUs of the cluster's 48: its gangs (at most 5 pods of 1 CPU) fit
# one at a time or two, so its capability, not the nodes, is what makes them wait.
CAPPED_QUEUE = "chaos-capped"
CAPPED_CAPABILITY = {"cpu": "6", "memory": "24Gi"}
CAPPED_CPUS = ("500m", "1")
CAPPED_EVERY = 3  # every third gang goes to the capped queue


def capped_queue() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": CAPPED_QUEUE},
        "spec": {"weight": 1, "reclaimable": False, "capability": dict(CAPPED_CAPABILITY)},
    }


@dataclass(frozen=True)
class GangSubmission:
    at: float  # seconds from the start of the run
    name: str
    replicas: int
    cpu: str
    run_seconds: int
    queue: str = "default"

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
                "queue": self.queue,
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
    submissions = []
    for index, at in enumerate(instants):
        capped = index % CAPPED_EVERY == CAPPED_EVERY - 1
        submissions.append(
            GangSubmission(
                at=round(at, 3),
                name=f"chaos-{seed}-{index:04d}",
                replicas=rng.choice(GANG_SIZES),
                cpu=rng.choice(CAPPED_CPUS if capped else CPUS),
                run_seconds=rng.choice(RUN_SECONDS),
                queue=CAPPED_QUEUE if capped else "default",
            )
        )
    return submissions


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
