"""The parts of one simulated cluster, as `app.build` wires them.

The HTTP app and the control API hold a `Cluster`; tests build one with fake timers and a manual
clock and drive it without HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from services.simulator.admission.audit import Audit
from services.simulator.admission.disruption import DisruptionController
from services.simulator.admission.operations import Operations
from services.simulator.admission.ratelimit import TokenBucket
from services.simulator.admission.webhooks import WebhookAdmission
from services.simulator.control.default_scheduler import DefaultScheduler
from services.simulator.control.resource_claims import ClaimController
from services.simulator.control.standin import StandIns
from services.simulator.control.volumes import VolumeBinder
from services.simulator.kubelets.kubelet import Kubelets
from services.simulator.kubelets.pod_trace import PodTrace
from services.simulator.settings import SimulatorSettings
from services.simulator.store.store import Store


@dataclass
class Cluster:
    settings: SimulatorSettings
    store: Store
    kubelets: Kubelets
    admission: WebhookAdmission
    operations: Operations
    limiter: TokenBucket | None
    scheduler: DefaultScheduler | None
    audit: Audit
    trace: PodTrace
    disruptions: DisruptionController
    stand_ins: StandIns
    volumes: VolumeBinder
    claims: ClaimController | None = None


def utc_now() -> datetime:
    return datetime.now(UTC)
