"""The asyncio Kubernetes client, configured from a kubeconfig file or in-cluster, and raw JSON calls.

The services speak to the API with `kubernetes_asyncio`'s ApiClient, the same code against a real
cluster and the simulator. Hot paths (list, watch, create, bind) go through `request`, which sends
and returns plain JSON: decoding every object into generated model classes costs more CPU than the
rest of the watcher's work. Each request is timed and its errors counted by verb (api_metrics.py).
API errors map onto the retry vocabulary: 5xx, 429 and connection failures are temporary, 4xx
other than 409 permanent.

A request may have to be sent by a moment or not at all (a bind of a scheduler decision, which
must not land after the decision's window: services/controller/gangs.py). The caller sets
`send_only_if` to a check; it runs once the request holds a connection, after any wait for the
pool, and a False answer raises `NotSent` before a byte is written.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from types import SimpleNamespace
from typing import Any

import aiohttp
import orjson
from kubernetes_asyncio import client, config

from shared.domain.errors import PermanentError, TemporaryError
from shared.kube import api_metrics

# Far above any object an API server stores (etcd's 1.5 MiB request limit, JSON-escaped at worst).
MAX_WATCH_LINE_BYTES = 64 * 2**20


# Whether a request may still be sent, asked once it has its connection (None: always).
send_only_if: ContextVar[Callable[[], bool] | None] = ContextVar("send_only_if", default=None)


class NotSent(Exception):
    """The request was not sent: its `send_only_if` check said no once it had a connection."""


async def _check_before_sending(
    session: aiohttp.ClientSession, context: SimpleNamespace, params: object
) -> None:
    check = send_only_if.get()
    if check is not None and not check():
        raise NotSent("not sent: too late once a connection was free")


def _send_checks() -> aiohttp.TraceConfig:
    """The check runs whether the connection is reused from the pool or newly made."""
    trace = aiohttp.TraceConfig()
    trace.on_connection_reuseconn.append(_check_before_sending)
    trace.on_connection_create_end.append(_check_before_sending)
    return trace


class ApiError(Exception):
    def __init__(self, status: int, body: dict[str, Any] | None, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.body = body or {}

    @property
    def reason(self) -> str:
        return str(self.body.get("reason", ""))


async def make_api_client(kubeconfig: str | None, *, connections: int = 64) -> client.ApiClient:
    configuration = client.Configuration()
    if kubeconfig:
        await config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    else:
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    # The client's default pool (4) serialises a busy controller's writes.
    configuration.connection_pool_maxsize = connections
    api = client.ApiClient(configuration)
    # kubernetes_asyncio's session trusts the environment, so aiohttp looks up proxy variables
    # and re-reads ~/.netrc (in a thread) on every request: a third of a busy controller's CPU.
    # A proxy for the API server comes from the kubeconfig (`proxy-url`), as client-go takes it.
    await api.rest_client.pool_manager.close()
    api.rest_client.pool_manager = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=configuration.connection_pool_maxsize, ssl=_tls(configuration)),
        trust_env=False,
        read_bufsize=2**21,  # watch events of large objects exceed aiohttp's default buffer
        trace_configs=[_send_checks()],
    )
    return api


def _tls(configuration: client.Configuration) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


async def request(
    api: client.ApiClient,
    method: str,
    path: str,
    *,
    body: Any = None,
    query: list[tuple[str, str]] | None = None,
    content_type: str = "application/json",
    timeout: float = 30.0,
) -> dict[str, Any]:
    """Send one request; the decoded JSON response, or `ApiError` with the Status body."""
    verb, resource = api_metrics.describe(method, path, query)
    started = time.perf_counter()
    try:
        async with await _send(api, method, path, query or [], body, content_type, timeout) as response:
            data = await response.read()
    except Exception:
        api_metrics.API_ERRORS.labels(verb, resource, "0").inc()
        raise
    api_metrics.API_LATENCY.labels(verb, resource).observe(time.perf_counter() - started)
    document = orjson.loads(data) if data else {}
    if not 200 <= response.status <= 299:
        api_metrics.API_ERRORS.labels(verb, resource, str(response.status)).inc()
        raise ApiError(response.status, document, document.get("message") or response.reason or "")
    return document


async def stream_lines(
    api: client.ApiClient, path: str, query: list[tuple[str, str]], *, timeout: float
) -> AsyncIterator[dict[str, Any]]:
    """A watch: yields each JSON event line until the server closes the stream."""
    verb, resource = api_metrics.describe("GET", path, query)
    api_metrics.WATCHES.labels(resource).inc()
    try:
        sent = await _send(api, "GET", path, query, None, "application/json", timeout)
    except Exception:
        api_metrics.API_ERRORS.labels(verb, resource, "0").inc()
        raise
    async with sent as response:
        if not 200 <= response.status <= 299:
            api_metrics.API_ERRORS.labels(verb, resource, str(response.status)).inc()
            data = await response.read()
            document = orjson.loads(data) if data else {}
            raise ApiError(response.status, document, document.get("message") or response.reason or "")
        pending = bytearray()
        async for chunk in response.content.iter_any():
            # Split lines ourselves: aiohttp's line reader refuses lines past twice its buffer
            # (4 MiB), and one such event would break the watch, and every watch after it.
            searched = len(pending)
            pending += chunk
            start = 0
            while (end := pending.find(b"\n", max(searched, start))) >= 0:
                line = bytes(pending[start:end])
                start = end + 1
                if line.strip():
                    yield orjson.loads(line)
            del pending[:start]
            if len(pending) > MAX_WATCH_LINE_BYTES:
                raise ApiError(0, None, f"a watch event passed {MAX_WATCH_LINE_BYTES} bytes")
        if pending.strip():
            yield orjson.loads(bytes(pending))


async def _send(
    api: client.ApiClient,
    method: str,
    path: str,
    query: list[tuple[str, str]],
    body: Any,
    content_type: str,
    timeout: float,
) -> aiohttp.ClientResponse:
    """One request on the ApiClient's connection pool, bypassing its generic call machinery.

    `call_api` walks every body to sanitise it and rebuilds headers and auth per call; on the hot
    paths (a pod create, a bind) that cost more than the request itself. The auth settings still
    come from the configuration, so refreshed and exec-provided tokens keep working.
    """
    configuration = api.configuration
    headers = {"Accept": "application/json", "User-Agent": api.user_agent or "phalanx"}
    setting = (await configuration.auth_settings()).get("BearerToken")
    if setting and setting.get("value"):
        headers[setting["key"]] = setting["value"]
    data = None
    if body is not None:
        headers["Content-Type"] = content_type
        data = orjson.dumps(body)
    session: aiohttp.ClientSession = api.rest_client.pool_manager
    return await session.request(
        method,
        f"{configuration.host}{path}",
        params=query,
        data=data,
        headers=headers,
        proxy=configuration.proxy,
        server_hostname=configuration.tls_server_name,
        timeout=aiohttp.ClientTimeout(total=timeout),
    )


def classify(error: ApiError) -> Exception:
    """The retry vocabulary for an API failure."""
    if error.status in (0, 429) or error.status >= 500 or error.status == 409:
        return TemporaryError(f"API {error.status}: {error}", delay=0.5)
    return PermanentError(f"API {error.status}: {error}")
