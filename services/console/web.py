"""The console's HTTP routes: the pages, their static assets, and `/events` (server-sent events).

Only GET. When a token is set, every request must carry it: `Authorization: Bearer <token>`, or
once as `?token=` which sets a same-site cookie so the browser's later requests carry it.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
from fastapi import FastAPI, Request, Response
from fastapi.responses import HTMLResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles

from services.console import pages
from services.console.audit_feed import AuditFeed
from services.console.cluster import ClusterReader
from services.console.page_rows import add_into
from services.console.read_model import ReadModel

STATIC = Path(__file__).parent / "static"
COOKIE = "phalanx_console_token"
KEEPALIVE_SECONDS = 15.0
SHARE_HOURS = 6.0  # the queues page's share chart covers this much


def create_app(
    model: ReadModel, cluster: ClusterReader, feed: AuditFeed, *, token: str | None = None
) -> FastAPI:
    app = FastAPI(title="Phalanx console", docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.middleware("http")
    async def require_token(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        if token is None:
            return await call_next(request)
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        given = given or request.query_params.get("token") or request.cookies.get(COOKIE, "")
        if not hmac.compare_digest(given.encode(), token.encode()):
            return Response("a console token is required (docs/console.md)\n", status_code=401)
        response = await call_next(request)
        if request.query_params.get("token"):
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        return response

    def page(request: Request, title: str, current: str, body: str) -> HTMLResponse:
        fragment = request.headers.get("x-console-fragment") == "1"
        return HTMLResponse(pages.layout(title, current, body, fragment=fragment))

    @app.get("/", include_in_schema=False)
    async def home(request: Request) -> Response:
        return await queues(request)

    @app.get("/queues")
    async def queues(request: Request) -> Response:
        total: dict[str, int] = {}
        for node in await model.nodes():
            if node.ready and not node.cordoned:
                add_into(total, node.allocatable)
        history = await model.share_history(SHARE_HOURS)
        body = pages.queues_page(
            await model.queues(), total, history, now=datetime.now(UTC), hours=SHARE_HOURS
        )
        return page(request, "Queues", "/queues", body)

    @app.get("/jobs")
    async def jobs(
        request: Request,
        namespace: str | None = None,
        queue: str | None = None,
        phase: str | None = None,
        age: str | None = None,
    ) -> Response:
        if age and age not in pages.AGES:
            return Response(f"age must be one of {', '.join(pages.AGES)} (got {age!r})\n", status_code=400)
        since = datetime.now(UTC) - timedelta(seconds=pages.AGES[age]) if age else None
        filters = {"namespace": namespace or None, "queue": queue or None, "phase": phase or None}
        found = await model.jobs(**filters, since=since)
        filters["age"] = age or None
        namespaces, phases = await model.namespaces_and_phases()
        choices = {
            "namespace": namespaces,
            "queue": [q.name for q in await model.queues()],
            "phase": sorted({*phases, "Pending", "Running", "Completed", "Failed"}),
        }
        return page(request, "Jobs", "/jobs", pages.jobs_page(found, filters, choices, now=datetime.now(UTC)))

    @app.get("/jobs/{namespace}/{name}")
    async def job(request: Request, namespace: str, name: str) -> Response:
        detail = await model.job(namespace, name)
        if detail is None:
            body = pages.layout(
                "Not found", "/jobs", pages.not_found(f"no job {namespace}/{name}"), fragment=False
            )
            return HTMLResponse(body, status_code=404)
        tasks, conditions = await asyncio.gather(
            cluster.tasks(namespace, name), cluster.conditions(namespace, detail.job.podgroup)
        )
        timeline = feed.timeline(namespace, name, detail.job.podgroup)
        body = pages.job_page(detail, tasks, conditions, timeline)
        return page(request, f"Job {namespace}/{name}", "/jobs", body)

    @app.get("/nodes")
    async def nodes(request: Request) -> Response:
        return page(request, "Nodes", "/nodes", pages.nodes_page(await model.nodes()))

    @app.get("/events")
    async def events() -> StreamingResponse:
        return StreamingResponse(
            _stream(feed), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
        )

    return app


async def _stream(feed: AuditFeed) -> AsyncIterator[bytes]:
    """Each audit event as one SSE message; a comment now and then keeps proxies from closing it."""
    listener = feed.listen()
    try:
        yield b": connected\n\n"
        while True:
            try:
                document = await asyncio.wait_for(listener.get(), KEEPALIVE_SECONDS)
            except TimeoutError:
                yield b": keepalive\n\n"
                continue
            data = document.get("data") or {}
            summary = {k: data.get(k) for k in ("service", "action", "kind", "namespace", "name", "outcome")}
            yield b"event: audit\ndata: " + orjson.dumps({"time": document.get("time"), **summary}) + b"\n\n"
    finally:
        feed.forget(listener)
