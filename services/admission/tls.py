"""Shell: the TLS the webhook serves with, kept current while the server runs.

`app.py` builds a `TlsKeeper` before the HTTPS server starts and hands the server its
`ssl.SSLContext`. `run()` then keeps that context current without a restart: new TLS handshakes
get the new certificate, connections already open finish on the old one.
- Generated material (the default): renewed by the policy in `certs.py` as it falls due; when the
  CA bundle changes it is published (the webhook configurations' caBundle) before any certificate
  from a new CA is served.
- Shared material (`cert_secret`, for replicas): the same policy, but the material lives in a
  Secret all replicas read and the first to find something due renews (cert_secret.py says
  how races resolve); each replica looks every `check_every` and adopts what it finds, publishing
  a changed bundle before it serves a certificate from it.
- Supplied files (`cert_file`, `key_file`, `ca_file`, e.g. a cert-manager Secret): re-read when
  their content changes; a new CA file is published the same way. A pair that does not match yet
  (the certificate written, the key not) is retried at the next look rather than served.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol

import structlog

from services.admission.cert_secret import Stored, next_step
from services.admission.certs import CertDirectory, Material, Policy, next_due, renew

log = structlog.get_logger()
PublishBundle = Callable[[bytes], Awaitable[None]]
# Wake at least this often to look again, however far off the next renewal is.
LONGEST_SLEEP = timedelta(hours=1)
# Reads of the shared Secret in one sync before giving up: each retry follows another replica's
# successful write, so running out means something rewrites it in a loop.
SHARED_ATTEMPTS = 5


class SharedMaterial(Protocol):
    """Where replicas share their material (secret_store.SecretStore)."""

    async def read(self) -> Stored | None: ...

    async def create(self, material: Material) -> bool: ...

    async def replace(self, material: Material, version: str) -> bool: ...


@dataclass(frozen=True)
class Supplied:
    cert: Path
    key: Path
    ca: Path


class TlsKeeper:
    def __init__(
        self,
        directory: Path,
        hosts: Sequence[str],
        policy: Policy,
        *,
        supplied: Supplied | None = None,
        shared: SharedMaterial | None = None,
        check_every: timedelta = timedelta(seconds=30),
    ) -> None:
        self._directory = CertDirectory(directory)
        self._hosts = list(hosts)
        self._policy = policy
        self._supplied = supplied
        self._shared = shared if supplied is None else None
        self._check_every = check_every
        self._material = self._directory.read()
        self._supplied_seen: tuple[bytes, bytes, bytes] | None = None
        self._unpublished: Material | None = None
        self._loaded = False  # whether `context` holds a certificate yet
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        if supplied is not None:
            if not self._reload_supplied():
                raise ValueError(
                    f"the supplied certificate {supplied.cert} and key {supplied.key} do not load"
                )
        elif shared is None:
            self._renew(datetime.now(UTC))
        # With `shared`, `sync_shared` loads the first material, from the Secret.

    @property
    def serving(self) -> Material:
        """The generated material whose certificate new handshakes get."""
        return self._material

    @property
    def shares_material(self) -> bool:
        return self._shared is not None

    @property
    def ca_pem(self) -> bytes:
        """The CA bundle to publish as the webhook configurations' caBundle."""
        if self._supplied is not None:
            return self._supplied.ca.read_bytes()
        return self._material.bundle_pem

    async def run(self, publish: PublishBundle | None) -> None:
        """Renew or re-read as things fall due, for as long as the server runs."""
        while True:
            now = datetime.now(UTC)
            if self._supplied is not None:
                wake = now + self._check_every
            elif self._shared is not None:  # another replica may have renewed it
                wake = min(next_due(self._material, self._policy, now), now + self._check_every)
            else:
                wake = min(next_due(self._material, self._policy, now), now + LONGEST_SLEEP)
            await asyncio.sleep(max((wake - datetime.now(UTC)).total_seconds(), 0.05))
            try:
                await self._step(publish)
            except Exception as error:  # keep serving what we have; try again at the next wake
                log.error("TLS renewal failed", error=str(error))
                await asyncio.sleep(1.0)

    async def sync_shared(self, publish: PublishBundle | None) -> None:
        """Adopt the shared Secret's material, creating or renewing it first when that is due."""
        assert self._shared is not None
        for _ in range(SHARED_ATTEMPTS):
            stored = await self._shared.read()
            step = next_step(stored, self._material, self._hosts, self._policy, datetime.now(UTC))
            if step.write == "create" and not await self._shared.create(step.material):
                continue  # another replica created it first: adopt theirs
            if step.write == "replace" and not await self._shared.replace(step.material, step.version):
                continue  # another replica renewed it first: adopt theirs
            await self._adopt(step.material, publish)
            return
        raise RuntimeError(f"the shared TLS Secret changed {SHARED_ATTEMPTS} times while being renewed")

    async def _adopt(self, material: Material, publish: PublishBundle | None) -> None:
        if self._loaded and _fingerprint(material) == _fingerprint(self._material):
            return
        if material.bundle_pem != self._material.bundle_pem and publish is not None:
            # Trust first, serve second, as for material of our own.
            await publish(material.bundle_pem)
        self._use(material)

    async def _step(self, publish: PublishBundle | None) -> None:
        if self._shared is not None:
            await self.sync_shared(publish)
            return
        if self._supplied is not None:
            bundle_before = self._supplied_seen[2] if self._supplied_seen else b""
            if self._reload_supplied() and publish is not None and self.ca_pem != bundle_before:
                await publish(self.ca_pem)
            return
        # A bundle whose publication failed is published again, not replaced by yet another CA.
        before = self._unpublished or self._material
        renewed = renew(before, self._hosts, self._policy, datetime.now(UTC))
        if renewed is self._material:
            return
        if renewed.authorities != self._material.authorities:
            # Trust first, serve second: the API server must know a CA before it sees its certificates.
            self._directory.write(renewed)
            self._unpublished = renewed
            if publish is not None:
                await publish(renewed.bundle_pem)
            self._unpublished = None
        self._use(renewed)

    def _renew(self, now: datetime) -> None:
        self._use(renew(self._material, self._hosts, self._policy, now))

    def _use(self, material: Material) -> None:
        """Write `material` (the server loads from files) and serve its certificate from now on."""
        self._directory.write(material)
        self.context.load_cert_chain(str(self._directory.cert), str(self._directory.key))
        self._loaded = True
        changed = material.cert is not None and (
            self._material.cert is None or material.cert.serial_number != self._material.cert.serial_number
        )
        self._material = material
        if changed and material.cert is not None:
            log.info(
                "serving certificate loaded",
                serial=format(material.cert.serial_number, "x"),
                issuer=material.cert.issuer.rfc4514_string(),
                not_after=material.cert.not_valid_after_utc.isoformat(),
                trusted_cas=len(material.authorities),
            )

    def _reload_supplied(self) -> bool:
        """Load the supplied files if they changed; False when they are not a usable pair yet."""
        supplied = self._supplied
        assert supplied is not None
        try:
            seen = (supplied.cert.read_bytes(), supplied.key.read_bytes(), supplied.ca.read_bytes())
        except OSError as error:
            log.warning("supplied TLS files unreadable", error=str(error))
            return False
        if seen == self._supplied_seen:
            return False
        try:
            # Into a scratch context first: a mismatched pair must not replace a working one.
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(str(supplied.cert), str(supplied.key))
            self.context.load_cert_chain(str(supplied.cert), str(supplied.key))
        except (ssl.SSLError, OSError) as error:
            log.warning("supplied TLS files not loaded; will look again", error=str(error))
            return False
        self._supplied_seen = seen
        log.info("supplied serving certificate loaded", path=str(supplied.cert))
        return True


def _fingerprint(material: Material) -> tuple[tuple[int, ...], int | None]:
    """What identifies material: its CAs' and its certificate's serial numbers."""
    cert = material.cert.serial_number if material.cert is not None else None
    return tuple(a.cert.serial_number for a in material.authorities), cert
