"""Admission's HTTP keep-alive outlasts its clients' (issue #13 path 8): a server that closes an
idle connection first races the client reusing it, and the call fails with "Server
disconnected". kube-apiserver keeps idle connections 90 s; the simulator keeps them 60 s."""

from __future__ import annotations

import pytest

from services.admission.settings import AdmissionSettings
from services.simulator.admission.webhooks import WEBHOOK_KEEPALIVE_SECONDS

pytestmark = pytest.mark.unit

KUBE_APISERVER_IDLE_SECONDS = 90


def test_admission_keeps_idle_connections_longer_than_its_clients() -> None:
    keep_alive = AdmissionSettings().keep_alive_seconds
    assert keep_alive > KUBE_APISERVER_IDLE_SECONDS
    assert keep_alive > WEBHOOK_KEEPALIVE_SECONDS
