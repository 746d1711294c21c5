"""Pure: the webhook's TLS material as a Kubernetes Secret, and what a replica does with one.

Admission replicas serve one certificate from one CA, kept in a Secret (`ADMISSION_CERT_SECRET`)
that the replicas themselves create and renew; `secret_store.py` reads and writes it, `tls.py`
acts on the `Step` that `next_step` returns here. The Secret is the single source of truth:

- no Secret yet: propose material (what this replica already has on disk, renewed, so an upgrade
  from one replica keeps the CA the API server trusts) and create it; of replicas racing, the API
  server accepts one create and the others read the winner's;
- a Secret whose material the rotation policy (`certs.renew`) leaves alone: serve it as it is;
- a Secret with something due: write the renewed material over it at the resourceVersion read, so
  of two replicas renewing at once one write fails (409) and that replica adopts the other's.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from services.admission.certs import Material, Policy, material_from_pem, renew

# The keys of a `kubernetes.io/tls` Secret, plus the CA bundle and the CAs' keys.
CERT, KEY, CA, CA_KEYS = "tls.crt", "tls.key", "ca.crt", "ca.key"
SECRET_TYPE = "kubernetes.io/tls"


@dataclass(frozen=True)
class Stored:
    """A Secret as read: its material and the resourceVersion to write over it at."""

    material: Material
    version: str


@dataclass(frozen=True)
class Step:
    """What to do next: `write` is "create", "replace" or "" (serve `material` as it is)."""

    write: str
    material: Material
    version: str = ""


def material_of(data: Mapping[str, str] | None) -> Material:
    """The material in a Secret's `data` (base64 values); absent or unreadable parts count as
    absent, so a Secret someone emptied by hand is renewed rather than served."""
    data = data or {}

    def part(key: str) -> bytes:
        try:
            return base64.b64decode(data.get(key) or "", validate=True)
        except ValueError:
            return b""

    return material_from_pem(part(CA), part(CA_KEYS), part(CERT), part(KEY))


def secret_data(material: Material) -> dict[str, str]:
    return {
        CERT: _encode(material.cert_pem),
        KEY: _encode(material.key_pem),
        CA: _encode(material.bundle_pem),
        CA_KEYS: _encode(material.ca_keys_pem),
    }


def _encode(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def secret_manifest(name: str, namespace: str, material: Material, version: str = "") -> dict[str, object]:
    metadata: dict[str, str] = {"name": name, "namespace": namespace}
    if version:
        metadata["resourceVersion"] = version
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": SECRET_TYPE,
        "metadata": {**metadata, "labels": {"app.kubernetes.io/name": "phalanx-admission"}},
        "data": secret_data(material),
    }


def next_step(
    stored: Stored | None, local: Material, hosts: Sequence[str], policy: Policy, now: datetime
) -> Step:
    """What a replica holding `local` does about the Secret it read (`None`: there is none)."""
    if stored is None:
        return Step("create", renew(local, hosts, policy, now))
    renewed = renew(stored.material, hosts, policy, now)
    if renewed is stored.material:
        return Step("", stored.material, stored.version)
    return Step("replace", renewed, stored.version)
