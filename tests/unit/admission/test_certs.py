"""The certificate rotation policy, run over simulated time: always a valid certificate, every CA
trusted before anything it signed is served, expired CAs dropped, and the files round-trip."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from services.admission.certs import CertDirectory, Material, Policy, next_due, renew

pytestmark = pytest.mark.unit

HOSTS = ["127.0.0.1", "phalanx-admission.volcano-system.svc"]
POLICY = Policy(
    cert_validity=timedelta(seconds=30), ca_validity=timedelta(seconds=60), renew_before=timedelta(seconds=10)
)
START = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def issuer_of(material: Material) -> int:
    assert material.cert is not None
    ca = next(a.cert for a in material.authorities if a.cert.subject == material.cert.issuer)
    material.cert.verify_directly_issued_by(ca)
    return ca.serial_number


def test_over_several_ca_lifetimes_the_served_certificate_is_always_valid_and_trusted_early() -> None:
    material = renew(Material(), HOSTS, POLICY, START)
    first_ca = material.authorities[0].cert.serial_number  # published with the webhooks at start
    trusted_since: dict[int, datetime] = {}
    served, signers = set(), set()
    for second in range(0, 200):
        now = START + timedelta(seconds=second)
        material = renew(material, HOSTS, POLICY, now)
        for authority in material.authorities:
            trusted_since.setdefault(authority.cert.serial_number, now)
            assert authority.cert.not_valid_after_utc > now, "an expired CA is still in the bundle"
        assert material.cert is not None
        assert material.cert.not_valid_after_utc - now >= POLICY.renew_before
        signer = issuer_of(material)
        if signer != first_ca:
            assert now - trusted_since[signer] >= POLICY.renew_before
        served.add(material.cert.serial_number)
        signers.add(signer)
    assert len(signers) >= 3, "the CA itself was renewed"
    assert len(served) >= 8, "the serving certificate was renewed"
    assert len(material.authorities) <= 3


def test_nothing_changes_before_the_next_due_moment() -> None:
    material = renew(Material(), HOSTS, POLICY, START)
    due = next_due(material, POLICY, START)
    assert due > START
    assert renew(material, HOSTS, POLICY, due - timedelta(seconds=1)) is material
    assert renew(material, HOSTS, POLICY, due + timedelta(seconds=1)) is not material


def test_a_new_host_gets_a_new_certificate_from_the_same_ca() -> None:
    material = renew(Material(), HOSTS, POLICY, START)
    moved = renew(material, [*HOSTS, "admission.example"], POLICY, START + timedelta(seconds=1))
    assert moved.cert is not None
    assert material.cert is not None
    assert moved.cert.serial_number != material.cert.serial_number
    assert moved.authorities == material.authorities


def test_the_directory_round_trips_and_keeps_keys_private(tmp_path: Path) -> None:
    material = Material()
    for second in (0, 45):  # the second step adds a CA: two keys in ca.key
        material = renew(material, HOSTS, POLICY, START + timedelta(seconds=second))
    assert len(material.authorities) == 2
    directory = CertDirectory(tmp_path / "certs")
    directory.write(material)
    read = directory.read()
    assert [a.cert for a in read.authorities] == [a.cert for a in material.authorities]
    assert read.cert == material.cert
    assert directory.key.stat().st_mode & 0o077 == 0
    assert directory.ca_keys.stat().st_mode & 0o077 == 0
    assert renew(read, HOSTS, POLICY, START + timedelta(seconds=45)).cert == material.cert


def test_a_policy_that_would_renew_forever_is_refused() -> None:
    with pytest.raises(ValueError, match="renew-before"):
        Policy(timedelta(seconds=10), timedelta(seconds=60), timedelta(seconds=10))
    with pytest.raises(ValueError, match="twice"):
        Policy(timedelta(seconds=30), timedelta(seconds=20), timedelta(seconds=10))
