"""Shell: the Secret that admission replicas share their TLS material through.

Reads it, creates it, replaces it at a resourceVersion; a 409 (another replica got there first)
is reported as `False`, never raised, so the caller reads again and adopts what won. What to write
is decided in `cert_secret.next_step`; `tls.TlsKeeper` drives the two.
"""

from __future__ import annotations

from kubernetes_asyncio import client

from services.admission.cert_secret import Stored, material_of, secret_manifest
from services.admission.certs import Material
from shared.kube.client import ApiError, request
from shared.kube.kinds import KINDS
from shared.volcano.objects import KubeObject

SECRET = KINDS["Secret"]


class SecretStore:
    def __init__(self, api: client.ApiClient, namespace: str, name: str) -> None:
        self._api, self.namespace, self.name = api, namespace, name

    async def read(self) -> Stored | None:
        try:
            secret = await request(self._api, "GET", SECRET.item(self.namespace, self.name))
        except ApiError as error:
            if error.status == 404:
                return None
            raise
        return Stored(material_of(secret.get("data")), KubeObject(secret).resource_version)

    async def create(self, material: Material) -> bool:
        """False when the Secret exists already (another replica created it first)."""
        body = secret_manifest(self.name, self.namespace, material)
        return await self._write("POST", SECRET.collection(self.namespace), body)

    async def replace(self, material: Material, version: str) -> bool:
        """False when the Secret changed since `version` was read (another replica renewed it)."""
        body = secret_manifest(self.name, self.namespace, material, version)
        return await self._write("PUT", SECRET.item(self.namespace, self.name), body)

    async def _write(self, method: str, path: str, body: dict[str, object]) -> bool:
        try:
            await request(self._api, method, path, body=body)
        except ApiError as error:
            if error.status == 409:
                return False
            raise
        return True
