"""The webhook's own TLS material: the CAs it trusts, the serving certificate, and when to renew them.

`renew` is the rotation policy as a plain function of the material, the hosts and the clock: it
returns the material to use from now on and never touches a file or a socket (`tls.py` does).

How rotation stays invisible to the API server, with R = renew-before:
- a serving certificate is replaced when less than R of it is left (and never outlives its CA);
- a new CA is made when less than 2R is left of the newest, and goes into the published bundle
  at once, but signs nothing until its predecessor has less than R left — so every CA is in the
  webhook configurations' caBundle at least R before any certificate it signed is served;
- a CA leaves the bundle when it expires, after the last certificate it signed.
`CertDirectory` keeps the material on disk (written atomically) so a restart picks it up.
"""

from __future__ import annotations

import ipaddress
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# Certificates start a little in the past: clocks across a cluster are never quite equal.
BACKDATE = timedelta(minutes=5)


@dataclass(frozen=True)
class Policy:
    cert_validity: timedelta
    ca_validity: timedelta
    renew_before: timedelta

    def __post_init__(self) -> None:
        if not timedelta(0) < self.renew_before < self.cert_validity:
            raise ValueError("renew-before must be positive and shorter than the certificate's validity")
        if self.ca_validity <= 2 * self.renew_before:
            raise ValueError("the CA's validity must be longer than twice the renew-before")


@dataclass(frozen=True)
class Authority:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class Material:
    authorities: tuple[Authority, ...] = ()  # oldest first; all of them go into the caBundle
    cert: x509.Certificate | None = None
    key: ec.EllipticCurvePrivateKey | None = None

    @property
    def bundle_pem(self) -> bytes:
        return b"".join(_pem(a.cert) for a in reversed(self.authorities))  # newest first

    @property
    def cert_pem(self) -> bytes:
        assert self.cert is not None
        return _pem(self.cert)

    @property
    def key_pem(self) -> bytes:
        assert self.key is not None
        return _key_pem(self.key)

    @property
    def ca_keys_pem(self) -> bytes:
        """Every CA's key (PEM blocks), since an older CA may still be the signer."""
        return b"".join(_key_pem(a.key) for a in self.authorities)


def renew(material: Material, hosts: Sequence[str], policy: Policy, now: datetime) -> Material:
    """The material to serve from `now` on: `material` itself when nothing is due."""
    authorities = tuple(a for a in material.authorities if a.cert.not_valid_after_utc > now)
    if not authorities or _left(authorities[-1].cert, now) < 2 * policy.renew_before:
        authorities = (*authorities, _new_authority(now, policy.ca_validity))
    signer = next(a for a in authorities if _left(a.cert, now) >= policy.renew_before)
    cert, key = material.cert, material.key
    if not _still_good(cert, key, authorities, hosts, policy, now):
        cert, key = _issue(signer, hosts, now, policy.cert_validity)
    if authorities == material.authorities and cert is material.cert:
        return material
    return replace(material, authorities=authorities, cert=cert, key=key)


def next_due(material: Material, policy: Policy, now: datetime) -> datetime:
    """When `renew` will next have something to do, unless the hosts change."""
    moments = [a.cert.not_valid_after_utc for a in material.authorities]
    if material.authorities:
        moments.append(material.authorities[-1].cert.not_valid_after_utc - 2 * policy.renew_before)
    if material.cert is not None:
        moments.append(material.cert.not_valid_after_utc - policy.renew_before)
    return max(now, min(moments, default=now))


def _left(cert: x509.Certificate, now: datetime) -> timedelta:
    return cert.not_valid_after_utc - now


def _still_good(
    cert: x509.Certificate | None,
    key: ec.EllipticCurvePrivateKey | None,
    authorities: Sequence[Authority],
    hosts: Sequence[str],
    policy: Policy,
    now: datetime,
) -> bool:
    if cert is None or key is None or _left(cert, now) < policy.renew_before:
        return False
    if cert.public_key() != key.public_key():
        return False
    if not any(_signed_by(cert, a.cert) for a in authorities):
        return False  # its CA is gone from the bundle: nobody would trust it
    return set(hosts) <= _names(cert)


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _names(cert: x509.Certificate) -> set[str]:
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    present = {str(v) for v in sans.get_values_for_type(x509.DNSName)}
    return present | {str(v) for v in sans.get_values_for_type(x509.IPAddress)}


def _new_authority(now: datetime, validity: timedelta) -> Authority:
    key = ec.generate_private_key(ec.SECP256R1())
    # Every CA has its own name, so the bundle and the served chain say which one is which.
    name = x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, f"phalanx-admission-ca {now:%Y-%m-%dT%H:%M:%S.%fZ}")]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(key, hashes.SHA256())
    )
    return Authority(cert, key)


def _issue(
    signer: Authority, hosts: Sequence[str], now: datetime, validity: timedelta
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(signer.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(min(now + validity, signer.cert.not_valid_after_utc))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(signer.key, hashes.SHA256())
    )
    return cert, key


@dataclass(frozen=True)
class CertDirectory:
    """The material on disk: `tls.crt`/`tls.key` (served), `ca.crt` (the bundle) and `ca.key`.

    `ca.key` holds every CA's key (PEM blocks), since an older CA may still be the signer.
    """

    path: Path

    @property
    def cert(self) -> Path:
        return self.path / "tls.crt"

    @property
    def key(self) -> Path:
        return self.path / "tls.key"

    @property
    def ca(self) -> Path:
        return self.path / "ca.crt"

    @property
    def ca_keys(self) -> Path:
        return self.path / "ca.key"

    def read(self) -> Material:
        """What the directory holds; whatever is missing or unreadable counts as absent."""
        return material_from_pem(
            _read_or_empty(self.ca),
            _read_or_empty(self.ca_keys),
            _read_or_empty(self.cert),
            _read_or_empty(self.key),
        )

    def write(self, material: Material) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        _write_atomically(self.ca_keys, material.ca_keys_pem, 0o600)
        _write_atomically(self.ca, material.bundle_pem, 0o644)
        _write_atomically(self.key, material.key_pem, 0o600)
        _write_atomically(self.cert, material.cert_pem, 0o644)


def material_from_pem(ca: bytes, ca_keys: bytes, cert: bytes, key: bytes) -> Material:
    """Material from its four PEM files (a folder's or a Secret's); what is missing or
    unreadable counts as absent, so a half-written set is renewed rather than served."""
    try:
        ca_certs = x509.load_pem_x509_certificates(ca)
        keys = [_load_key(block) for block in _pem_blocks(ca_keys)]
    except ValueError:
        return Material()
    authorities = []
    for ca_cert in ca_certs:
        ca_key = next((k for k in keys if k.public_key() == ca_cert.public_key()), None)
        if ca_key is not None:
            authorities.append(Authority(ca_cert, ca_key))
    authorities.sort(key=lambda a: a.cert.not_valid_after_utc)
    try:
        served = x509.load_pem_x509_certificate(cert)
        served_key = _load_key(key)
    except ValueError:
        return Material(tuple(authorities))
    return Material(tuple(authorities), served, served_key)


def _read_or_empty(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _load_key(pem: bytes) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError("not an elliptic-curve key")
    return key


def _pem_blocks(data: bytes) -> list[bytes]:
    end = b"-----END PRIVATE KEY-----"
    return [block.strip() + b"\n" + end + b"\n" for block in data.split(end) if block.strip()]


def _write_atomically(path: Path, data: bytes, mode: int) -> None:
    """Replace `path` in one step, so a reader (or a restart) never sees half a file."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    partial.chmod(mode)
    os.replace(partial, path)


def main(argv: Sequence[str]) -> None:
    """`python -m services.admission.certs DIR HOST...`: a CA and a server certificate for HOSTs in
    DIR (docker compose issues the NATS server's this way); kept when still good, else renewed."""
    if len(argv) < 2:
        raise SystemExit("usage: python -m services.admission.certs DIR HOST...")
    directory = CertDirectory(Path(argv[0]))
    year = timedelta(days=365)
    policy = Policy(cert_validity=year, ca_validity=5 * year, renew_before=timedelta(days=30))
    directory.write(renew(directory.read(), list(argv[1:]), policy, datetime.now(UTC)))


if __name__ == "__main__":
    main(sys.argv[1:])
