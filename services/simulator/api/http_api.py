"""The HTTP face of the simulated apiserver: a hand-rolled ASGI app, orjson in and out.

It resolves a URL to a kind, namespace, name and subresource, reads the query (selectors,
limit/continue, watch), awaits the write rate limit, and calls the verbs in `operations`,
the watch stream in `watch` or the control API in `control_api`. Errors leave as Status objects.
Kept free of frameworks on purpose: this path carries thousands of requests a second.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import orjson

from services.simulator.admission.request_parts import delete_options, json_body, yaml_body
from services.simulator.admission.request_parts import dry_run as dry_run_requested
from services.simulator.api import control_api, openapi, scale, tables
from services.simulator.api.watch import JSON_HEADERS, Receive, Send, WatchFilter, serve_watch
from services.simulator.cluster import Cluster, utc_now
from services.simulator.store import api_resources, errors
from services.simulator.store.api_resources import Kind
from services.simulator.store.errors import ApiError
from services.simulator.store.selectors import parse_field_selector, parse_label_selector

log = logging.getLogger(__name__)
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
APPLY_PATCH = "application/apply-patch+yaml"
# kube-apiserver refuses request bodies larger than this (3 MiB) before decoding them.
MAX_REQUEST_BYTES = 3 * 1024 * 1024


@dataclass(frozen=True)
class Target:
    kind: Kind
    namespace: str | None  # None: every namespace (or a cluster-scoped kind)
    name: str
    subresource: str


def resolve(parts: list[str]) -> Target | None:
    """`api/v1/namespaces/ns/pods/p/status` → (pods, ns, p, status); None when unknown."""
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    kind = api_resources.BY_PATH.get((group, version, rest[0]))
    if kind is None:
        return None
    if not kind.namespaced:
        namespace = None
    elif namespace is None and len(rest) > 1:
        return None
    return Target(kind, namespace, rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else "")


class ApiApp:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        method, path = scope["method"], scope["path"]
        params = dict(parse_qsl(scope["query_string"].decode(), keep_blank_values=True))
        try:
            if method == "GET" and params.get("watch") in ("true", "1"):
                accept = next((v.decode() for k, v in scope["headers"] if k.lower() == b"accept"), "")
                await self._watch(path, params, accept, receive, send)
                return
            body = await _read_body(receive) if method in _WRITES else b""
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            status, answer = await self._dispatch(method, path, params, headers, body)
            if method == "GET" and status == 200 and tables.wants_table(headers.get("accept", "")):
                answer = self._as_table(answer)
        except ApiError as error:
            status, answer = error.code, error.to_status()
        except Exception:  # a bug here must answer 500, not drop the connection
            log.exception("request %s %s failed", method, path)
            failure = errors.internal("the simulator failed to handle the request")
            status, answer = failure.code, failure.to_status()
        payload = orjson.dumps(answer)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [*JSON_HEADERS, (b"content-length", str(len(payload)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": payload})

    def _as_table(self, answer: Any) -> Any:
        if not isinstance(answer, dict) or "kind" not in answer or "apiVersion" not in answer:
            return answer
        listed = answer["kind"].endswith("List") and "items" in answer
        kind_name = answer["kind"][: -len("List")] if listed else answer["kind"]
        kind = api_resources.BY_KIND.get((answer["apiVersion"], kind_name))
        if kind is None:
            return answer
        objects = answer["items"] if listed else [answer]
        version = answer["metadata"].get("resourceVersion", "")
        return tables.table(kind, objects, version, utc_now(), answer["metadata"].get("continue"))

    async def _watch(
        self, path: str, params: dict[str, str], accept: str, receive: Receive, send: Send
    ) -> None:
        target = resolve(path.strip("/").split("/"))
        if target is None or target.name:
            raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
        render = None
        if tables.wants_table(accept):
            kind = target.kind

            def render(obj: dict[str, Any]) -> Any:
                version = obj["metadata"].get("resourceVersion", "")
                return tables.table(kind, [obj], version, utc_now())

        watch_filter = WatchFilter(
            target.namespace,
            parse_label_selector(params.get("labelSelector")),
            parse_field_selector(params.get("fieldSelector"), target.kind.kind),
            render,
        )
        await serve_watch(
            self.cluster.store,
            target.kind,
            watch_filter,
            params,
            receive,
            send,
            self.cluster.settings.bookmark_interval,
        )

    async def _dispatch(
        self, method: str, path: str, params: dict[str, str], headers: dict[str, str], body: bytes
    ) -> tuple[int, Any]:
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["simulator", "v1"]:
            return await control_api.handle(self.cluster, method, parts[2:], json_body(body))
        discovery = _discovery(parts)
        if discovery is not None:
            return 200, discovery
        if method in _WRITES and self.cluster.limiter is not None:
            await self.cluster.limiter.acquire()
        audit = self.cluster.audit
        if parts[:2] == ["api", "v1"] and len(parts) == 5 and parts[4] == "bindings" and method == "POST":
            payload = json_body(body)
            name = (payload.get("metadata") or {}).get("name", "") if isinstance(payload, dict) else ""
            answer = await self.cluster.operations.bind(parts[3], name, payload)
            audit.write(method, "pods/binding")
            audit.pod_bound(parts[3], name)
            return 201, answer
        target = resolve(parts)
        if target is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        status, answer = await self._serve(target, method, params, headers, body)
        if method in _WRITES and not dry_run_requested(params):
            resource = (
                f"{target.kind.plural}/{target.subresource}" if target.subresource else target.kind.plural
            )
            audit.write(method, resource)
            if target.kind is api_resources.PODS and method == "POST":
                if target.subresource == "binding":
                    audit.pod_bound(target.namespace or "", target.name)
                elif not target.name:
                    audit.pod_created(answer["metadata"]["namespace"], answer["metadata"]["name"])
        return status, answer

    async def _serve(
        self,
        target: Target,
        method: str,
        params: dict[str, str],
        headers: dict[str, str],
        body: bytes,
    ) -> tuple[int, Any]:
        store, operations = self.cluster.store, self.cluster.operations
        kind, namespace, name, sub = (
            target.kind,
            target.namespace or "",
            target.name,
            target.subresource,
        )
        if sub == "scale" and kind in scale.SCALABLE and name:
            return 200, await scale.serve(store, operations, kind, namespace, name, method, json_body(body))
        if sub and not _subresource_served(kind, sub, method):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        dry_run = dry_run_requested(params)
        manager = params.get("fieldManager")
        validation = params.get("fieldValidation", "")
        if validation not in ("", "Ignore", "Warn", "Strict"):
            raise errors.bad_request(
                f'fieldValidation: Unsupported value: "{validation}": supported values: '
                '"Ignore", "Warn", "Strict"'
            )
        writing: dict[str, Any] = {
            "status_only": sub == "status",
            "dry_run": dry_run,
            "field_manager": manager,
            "field_validation": validation,
        }
        if not name:
            if method == "GET":
                return 200, self._list(target, params)
            if method == "POST":
                return 201, await operations.create(
                    kind,
                    namespace,
                    json_body(body),
                    dry_run=dry_run,
                    field_manager=manager,
                    field_validation=validation,
                )
            if method == "DELETE":
                return 200, await self._delete_collection(target, params, body)
        elif method == "GET":
            return 200, store.get(kind, namespace, name)
        elif method == "PUT":
            return 200, await operations.update(kind, namespace, name, json_body(body), **writing)
        elif method == "PATCH":
            content_type = headers.get("content-type", "application/merge-patch+json")
            if content_type.split(";")[0].strip() == APPLY_PATCH and not sub:
                return await self._apply(target, params, body, dry_run)
            return 200, await operations.patch(
                kind, namespace, name, content_type, json_body(body), **writing
            )
        elif method == "DELETE":
            options = delete_options(params, body)
            return 200, await operations.delete(kind, namespace, name, options, dry_run=dry_run)
        elif method == "POST" and sub == "binding":
            return 201, await operations.bind(
                namespace,
                name,
                {**json_body(body), "metadata": {**(json_body(body).get("metadata") or {}), "name": name}},
                dry_run=dry_run,
            )
        elif method == "POST" and sub == "eviction":
            return 201, await operations.evict(namespace, name, json_body(body), dry_run=dry_run)
        raise ApiError(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )

    async def _apply(
        self, target: Target, params: dict[str, str], body: bytes, dry_run: bool
    ) -> tuple[int, Any]:
        """Server-side apply: 201 when it created the object, 200 when it changed one."""
        manager = params.get("fieldManager")
        if not manager:
            raise errors.bad_request("PATCH: fieldManager is required for apply requests")
        existed = self.cluster.store.find(target.kind, target.namespace or "", target.name) is not None
        answer = await self.cluster.operations.apply(
            target.kind,
            target.namespace or "",
            target.name,
            yaml_body(body),
            manager,
            force=params.get("force") == "true",
            dry_run=dry_run,
        )
        return (200 if existed else 201), answer

    def _list(self, target: Target, params: dict[str, str]) -> dict[str, Any]:
        store = self.cluster.store
        version = store.resource_version
        items = store.select(
            target.kind,
            target.namespace,
            parse_label_selector(params.get("labelSelector")),
            parse_field_selector(params.get("fieldSelector"), target.kind.kind),
        )
        metadata: dict[str, Any] = {"resourceVersion": str(version)}
        limit = int(params.get("limit") or 0)
        token = params.get("continue")
        if limit > 0 or token:
            items.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
            if token:
                after = tuple(orjson.loads(base64.urlsafe_b64decode(token.encode())))
                items = [
                    o for o in items if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) > after
                ]
            if limit > 0 and len(items) > limit:
                last = items[limit - 1]["metadata"]
                metadata["continue"] = base64.urlsafe_b64encode(
                    orjson.dumps([last.get("namespace", ""), last["name"]])
                ).decode()
                metadata["remainingItemCount"] = len(items) - limit
                items = items[:limit]
        kind = target.kind
        return {
            "kind": f"{kind.kind}List",
            "apiVersion": kind.api_version,
            "metadata": metadata,
            "items": items,
        }

    async def _delete_collection(self, target: Target, params: dict[str, str], body: bytes) -> Any:
        doomed = self._list(target, params)
        options = delete_options(params, body)
        for obj in doomed["items"]:
            meta = obj["metadata"]
            if self.cluster.store.find(target.kind, meta.get("namespace", ""), meta["name"]):
                await self.cluster.operations.delete(
                    target.kind,
                    meta.get("namespace", ""),
                    meta["name"],
                    options,
                    dry_run=dry_run_requested(params),
                )
        return doomed


def _subresource_served(kind: Kind, sub: str, method: str) -> bool:
    if sub == "status":
        return kind.has_status and method in ("GET", "PUT", "PATCH")
    return kind is api_resources.PODS and sub in ("binding", "eviction") and method == "POST"


def _discovery(parts: list[str]) -> Any:
    if parts == ["version"]:
        return api_resources.version_info()
    if parts == ["api"]:
        return api_resources.core_versions()
    if parts == ["apis"]:
        return api_resources.group_list()
    if len(parts) == 2 and parts[0] == "api":
        return api_resources.resource_list("", parts[1])
    if len(parts) == 2 and parts[0] == "apis":
        return api_resources.group_document(parts[1])
    if len(parts) == 3 and parts[0] == "apis":
        return api_resources.resource_list(parts[1], parts[2])
    if parts and parts[0] in ("healthz", "readyz", "livez"):
        return "ok"
    if parts == ["openapi", "v2"]:
        return openapi.v2()
    if parts == ["openapi", "v3"]:
        return openapi.root()
    if len(parts) > 2 and parts[:2] == ["openapi", "v3"]:
        return openapi.group_version("/".join(parts[2:]))
    return None


async def _read_body(receive: Receive) -> bytes:
    """The request body, refused once it passes kube-apiserver's 3 MiB limit (413), before the
    rest is held in memory."""
    chunks, size = [], 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            raise ApiError(
                413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_REQUEST_BYTES}"
            )
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
