"""Replicas sharing one CA and serving certificate through a Secret: what each does with the
Secret it reads (create, serve as is, renew), that the Secret round-trips the material, and that
replicas that race over simulated time all serve one certificate, trusted before it is served."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest

from services.admission.cert_secret import (
    CA,
    CERT,
    SECRET_TYPE,
    Stored,
    material_of,
    next_step,
    secret_data,
    secret_manifest,
)
from services.admission.certs import Material, Policy, renew

pytestmark = pytest.mark.unit

HOSTS = ["127.0.0.1", "phalanx-admission.volcano-system.svc"]
POLICY = Policy(
    cert_validity=timedelta(seconds=30), ca_validity=timedelta(seconds=60), renew_before=timedelta(seconds=10)
)
START = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def serials(material: Material) -> tuple[tuple[int, ...], int]:
    assert material.cert is not None
    return tuple(a.cert.serial_number for a in material.authorities), material.cert.serial_number


def test_the_secret_round_trips_every_ca_its_key_and_the_served_pair() -> None:
    material = renew(renew(Material(), HOSTS, POLICY, START), HOSTS, POLICY, START + timedelta(seconds=45))
    assert len(material.authorities) == 2, "a CA and its successor, both with keys"
    back = material_of(secret_data(material))
    assert serials(back) == serials(material)
    assert back.key_pem == material.key_pem
    keys = [authority.key.public_key() for authority in material.authorities]
    assert [authority.key.public_key() for authority in back.authorities] == keys


def test_the_manifest_is_a_tls_secret_and_carries_the_version_it_replaces() -> None:
    material = renew(Material(), HOSTS, POLICY, START)
    manifest = secret_manifest("phalanx-admission-tls", "volcano-system", material, "41")
    assert manifest["type"] == SECRET_TYPE
    assert manifest["metadata"]["resourceVersion"] == "41"  # type: ignore[index]
    assert base64.b64decode(manifest["data"][CA]) == material.bundle_pem  # type: ignore[index]
    assert "resourceVersion" not in secret_manifest("n", "ns", material)["metadata"]  # type: ignore[operator]


@pytest.mark.parametrize(
    "data",
    [None, {}, {CERT: "not base64!"}, {CA: base64.b64encode(b"-----BEGIN CERTIFICATE-----\nxx").decode()}],
)
def test_an_empty_or_damaged_secret_counts_as_no_material(data: dict[str, str] | None) -> None:
    assert material_of(data) == Material()


def test_no_secret_yet_proposes_the_replicas_own_material_so_an_upgrade_keeps_its_ca() -> None:
    local = renew(Material(), HOSTS, POLICY, START)
    step = next_step(None, local, HOSTS, POLICY, START + timedelta(seconds=1))
    assert step.write == "create"
    assert step.material is local, "nothing was due: the CA the API server trusts stays"
    fresh = next_step(None, Material(), HOSTS, POLICY, START)
    assert fresh.write == "create"
    assert fresh.material.cert is not None


def test_a_current_secret_is_served_as_it_is_whatever_the_replica_had() -> None:
    shared = renew(Material(), HOSTS, POLICY, START)
    mine = renew(Material(), HOSTS, POLICY, START)
    step = next_step(Stored(shared, "7"), mine, HOSTS, POLICY, START + timedelta(seconds=5))
    assert (step.write, step.material, step.version) == ("", shared, "7")


def test_a_secret_with_a_renewal_due_is_replaced_at_the_version_read() -> None:
    shared = renew(Material(), HOSTS, POLICY, START)
    step = next_step(Stored(shared, "7"), Material(), HOSTS, POLICY, START + timedelta(seconds=25))
    assert step.write == "replace"
    assert step.version == "7"
    assert serials(step.material)[0][0] == serials(shared)[0][0], "the same CA signs the new certificate"
    assert serials(step.material)[1] != serials(shared)[1]


class SecretOfOneVersion:
    """The API server's rule for one object, in memory: a write at a stale version is refused."""

    def __init__(self) -> None:
        self.stored: Stored | None = None
        self.writes = 0

    def write(self, material: Material, expected: str | None) -> bool:
        current = self.stored.version if self.stored else None
        if current != expected:
            return False
        self.writes += 1
        self.stored = Stored(material, str(self.writes))
        return True


def test_replicas_that_race_over_many_renewals_always_serve_one_trusted_certificate() -> None:
    secret = SecretOfOneVersion()
    replicas = [Material(), Material(), Material()]
    published: dict[int, datetime] = {}  # CA serial -> when some replica first saw it in the Secret
    first_ca: int | None = None
    signers: set[int] = set()
    for second in range(0, 200, 2):
        now = START + timedelta(seconds=second)
        # Each replica read the Secret at the same moment, then they write in turn.
        seen = secret.stored
        for index, local in enumerate(replicas):
            step = next_step(seen, local, HOSTS, POLICY, now)
            won = step.write == "" or secret.write(step.material, seen.version if seen else None)
            # Whoever lost reads again and adopts the winner's.
            assert secret.stored is not None
            replicas[index] = step.material if won else secret.stored.material
        assert secret.stored is not None
        for authority in secret.stored.material.authorities:
            published.setdefault(authority.cert.serial_number, now)
        served = {serials(material)[1] for material in replicas}
        assert served == {serials(secret.stored.material)[1]}, "every replica serves the same certificate"
        cert = secret.stored.material.cert
        assert cert is not None
        signer = next(a for a in secret.stored.material.authorities if a.cert.subject == cert.issuer)
        first_ca = first_ca or signer.cert.serial_number  # published with the webhooks at start
        if signer.cert.serial_number != first_ca:
            # In the Secret (so in every replica's published bundle) long before it signs.
            assert now - published[signer.cert.serial_number] >= POLICY.renew_before
        signers.add(signer.cert.serial_number)
    assert len(signers) >= 3, "the CA itself was renewed, more than once"
    assert secret.writes < 100 / 2, "a renewal is written once, not once per replica"
