"""Admission as kube-apiserver does it: mutating webhooks, then validating ones, over HTTPS.

The request handlers call `mutate` before the store's own validation and `validate` after it.
Webhooks come from the configuration objects in the store (`webhook_rules` picks them); each
is POSTed an AdmissionReview over TLS checked against its caBundle, within its timeoutSeconds.
A denial becomes the apiserver's error (`admission webhook "x" denied the request: ...`); a
failure to call becomes a 500 under failurePolicy Fail and is ignored under Ignore. A call whose
kept-alive connection the webhook closed under it is sent again on a new connection, as
kube-apiserver retries such connection-level failures.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import aiohttp
import orjson

from services.simulator.admission.patches import json_patch
from services.simulator.admission.webhook_rules import (
    AdmissionAttributes,
    Webhook,
    matching_webhooks,
    review_request,
)
from services.simulator.store import errors
from services.simulator.store.api_resources import MUTATING_WEBHOOKS, NAMESPACES, VALIDATING_WEBHOOKS
from services.simulator.store.errors import ApiError
from services.simulator.store.store import Store

# Webhook configurations are never sent through webhooks, so a bad webhook cannot lock itself in.
_EXEMPT = frozenset({MUTATING_WEBHOOKS, VALIDATING_WEBHOOKS})


class WebhookCallError(Exception):
    pass


KEPT_SESSIONS = 4  # webhook TLS sessions, one per CA bundle in use
WEBHOOK_KEEPALIVE_SECONDS = 60  # how long an idle webhook connection is kept for reuse
CONNECTION_RETRIES = 2  # calls sent again after the connection was lost under them


class WebhookAdmission:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._clients: dict[str, aiohttp.ClientSession] = {}
        self._closing: set[asyncio.Task[None]] = set()

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()

    def _webhooks(self, request: AdmissionAttributes, *, mutating: bool) -> list[Webhook]:
        if request.kind in _EXEMPT:
            return []
        kind = MUTATING_WEBHOOKS if mutating else VALIDATING_WEBHOOKS
        if self._store.is_empty(kind):
            return []
        configurations = list(self._store.iterate(kind))
        namespace = self._store.find(NAMESPACES, "", request.namespace) if request.namespace else None
        labels = (namespace or {}).get("metadata", {}).get("labels") if namespace else None
        return matching_webhooks(configurations, request, labels, mutating=mutating)

    async def mutate(self, request: AdmissionAttributes) -> Mapping[str, Any] | None:
        """The object after every matching mutating webhook has patched it."""
        current = request.object
        for webhook in self._webhooks(request, mutating=True):
            attributes = replace(request, object=current)
            response = await self._call(webhook, attributes)
            if response is not None and response.get("patch") and current is not None:
                if response.get("patchType", "JSONPatch") != "JSONPatch":
                    raise errors.internal(f'failed calling webhook "{webhook.name}": unsupported patch type')
                operations = orjson.loads(base64.b64decode(response["patch"]))
                current = json_patch(current, operations)
        return current

    async def validate(self, request: AdmissionAttributes) -> None:
        for webhook in self._webhooks(request, mutating=False):
            await self._call(webhook, request)

    async def _call(self, webhook: Webhook, request: AdmissionAttributes) -> dict[str, Any] | None:
        """The webhook's response when it allowed the request; raises its denial."""
        if request.dry_run and webhook.side_effects not in ("None", "NoneOnDryRun"):
            # A webhook that may have side effects is never sent a dry run: the request fails.
            raise errors.bad_request(
                f'admission webhook "{webhook.name}" does not support dry run '
                f"(sideEffects: {webhook.side_effects})"
            )
        review_uid = str(uuid.uuid4())
        try:
            response = await self._post(webhook, review_request(review_uid, request))
        except WebhookCallError as failure:
            if webhook.failure_policy == "Ignore":
                return None
            raise errors.internal(f'failed calling webhook "{webhook.name}": {failure}') from None
        if response.get("allowed"):
            return response
        status = response.get("status") or {}
        denied = f'admission webhook "{webhook.name}" denied the request'
        if status.get("message"):
            message = f"{denied}: {status['message']}"
        elif status.get("reason"):
            message = f"{denied}: {status['reason']}"
        else:
            message = f"{denied} without explanation"
        code = max(int(status.get("code") or 400), 400)
        raise ApiError(code, status.get("reason") or "", message)

    async def _post(self, webhook: Webhook, review: dict[str, Any]) -> dict[str, Any]:
        config = webhook.client_config
        url, server_name = _target(config)
        session = self._client(config.get("caBundle") or "")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + webhook.timeout_seconds
        for attempt in range(CONNECTION_RETRIES + 1):
            try:
                async with session.post(
                    url,
                    data=orjson.dumps(review),
                    headers={"Content-Type": "application/json"},
                    timeout=aiohttp.ClientTimeout(
                        total=max(deadline - asyncio.get_running_loop().time(), 0.01)
                    ),
                    server_hostname=server_name,
                ) as answer:
                    status, content = answer.status, await answer.read()
                break
            except TimeoutError:
                raise WebhookCallError(
                    f'failed to call webhook: Post "{url}": context deadline exceeded'
                ) from None
            except (aiohttp.ClientError, ssl.SSLError, OSError) as error:
                # Like kube-apiserver: a kept-alive connection that the webhook closed just as it
                # was reused (reset, disconnected) is a connection-level failure, retried on a
                # new connection within the same timeout; a refusal to connect is not.
                if attempt < CONNECTION_RETRIES and _connection_lost(error):
                    continue
                raise WebhookCallError(f'failed to call webhook: Post "{url}": {error}') from None
        if status != 200:
            raise WebhookCallError(f"received invalid webhook response code {status}")
        try:
            body = orjson.loads(content)
            response = body["response"]
            if response.get("uid") != review["request"]["uid"]:
                expected, got = review["request"]["uid"], response.get("uid")
                raise WebhookCallError(f"expected response.uid={expected!r}, got {got!r}")
            return dict(response)
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
            raise WebhookCallError("received invalid webhook response") from None

    def _client(self, ca_bundle: str) -> aiohttp.ClientSession:
        """One keep-alive session per CA bundle. aiohttp rather than httpx: with a burst of calls
        in flight, httpx's connection pool bookkeeping cost more than the calls themselves."""
        session = self._clients.get(ca_bundle)
        if session is None:
            if ca_bundle:
                context = ssl.create_default_context(cadata=base64.b64decode(ca_bundle).decode())
            else:
                context = ssl.create_default_context()
            connector = aiohttp.TCPConnector(
                ssl=context, limit=256, keepalive_timeout=WEBHOOK_KEEPALIVE_SECONDS
            )
            session = self._clients[ca_bundle] = aiohttp.ClientSession(connector=connector, trust_env=False)
            # A webhook that rotates its CA publishes a new bundle each time; the sessions of
            # bundles no longer published are closed rather than kept forever.
            while len(self._clients) > KEPT_SESSIONS:
                oldest = next(iter(self._clients))
                retired = self._clients.pop(oldest)
                self._closing.add(task := asyncio.get_running_loop().create_task(retired.close()))
                task.add_done_callback(self._closing.discard)
        return session


def _connection_lost(error: BaseException) -> bool:
    if isinstance(error, aiohttp.ClientConnectorError):
        return False  # never connected: nothing was lost
    return isinstance(error, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError, ConnectionResetError))


def _target(config: Mapping[str, Any]) -> tuple[str, str | None]:
    """The URL to POST to, and the TLS server name to check when it is an in-cluster Service.

    The simulator has no cluster network: a Service reference is reached on 127.0.0.1 at the
    Service's port, while the certificate is still checked for `<name>.<namespace>.svc`.
    """
    if config.get("url"):
        return str(config["url"]), None
    service = config.get("service") or {}
    host = f"{service.get('name')}.{service.get('namespace')}.svc"
    url = f"https://127.0.0.1:{service.get('port', 443)}{service.get('path', '')}"
    return url, host
