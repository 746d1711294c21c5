"""Shell: the HTTPS endpoints the API server calls — `/mutate` and `/validate` — and nothing else.

Each request is size-checked, decoded, given its context, passed to the pure `review`, and the
AdmissionReview written back. Every validation decision (allowed, or denied and why) is published
on `audit.admission.*` without delaying the answer, once per review (its uid is the record's id),
and never for a dry run.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

import orjson
import structlog
from prometheus_client import Counter, Histogram
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from services.admission import review as core
from services.admission.context_loader import ContextLoader, ContextUnavailable
from shared import failpoints, tracing
from shared.messages.audit import AuditRecorded, audit_event
from shared.volcano.keys import TRACEPARENT
from shared.volcano.objects import KubeObject

log = structlog.get_logger()
REVIEWS = Counter("phalanx_admission_reviews_total", "Admission reviews.", ["webhook", "kind", "allowed"])
LATENCY = Histogram("phalanx_admission_review_seconds", "Time to answer one review.", ["webhook"])
Publish = Callable[[str, bytes, str], Coroutine[Any, Any, None]]


def build_app(loader: ContextLoader, publish: Publish | None, *, max_request_bytes: int) -> Starlette:
    background: set[asyncio.Task[None]] = set()

    def audit(answer: dict[str, Any], review_in: dict[str, Any]) -> None:
        req = review_in.get("request") or {}
        # A dry run creates nothing (webhooks are registered `sideEffects: None`): auditing it
        # would show an operator an admission of an object that never existed.
        if publish is None or req.get("dryRun") is True:
            return
        found = req.get("object") or req.get("oldObject") or {}
        obj = KubeObject(found if isinstance(found, dict) else {})
        response = answer.get("response") or {}
        allowed = bool(response.get("allowed"))
        kind = str((req.get("kind") or {}).get("kind") or "")
        # A refused object's name may be anything; the audit subject carries at most a legal one.
        name = str(obj.name or req.get("name") or obj.meta.get("generateName") or "")[:253]
        record = AuditRecorded(
            service="admission",
            action="admitted" if allowed else "denied",
            kind=kind,
            namespace=req.get("namespace") or None,
            name=name,
            uid=obj.uid or None,
            outcome="allowed" if allowed else "denied",
            message=(response.get("status") or {}).get("message", ""),
            details={"operation": req.get("operation"), "user": (req.get("userInfo") or {}).get("username")},
        )
        subject, event = audit_event(record, event_id=f"admission:{req.get('uid')}")
        task = asyncio.get_running_loop().create_task(publish(subject, event.to_bytes(), event.id))
        background.add(task)
        task.add_done_callback(_forget(background))

    def endpoint(webhook: core.Webhook) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        async def handle(request: Request) -> Response:
            with LATENCY.labels(webhook).time():
                body = await _limited_body(request, max_request_bytes)
                if body is None:
                    return _json(
                        _refusal(413, f"request body exceeds the limit of {max_request_bytes} bytes"), 413
                    )
                try:
                    review_in = orjson.loads(body)
                except orjson.JSONDecodeError as error:
                    return _json(_refusal(400, f"the body is not JSON: {error}"), 400)
                if not isinstance(review_in, dict):
                    return _json(_refusal(400, "the body is not an AdmissionReview object"), 400)
                try:
                    ctx = await loader.load(review_in, webhook)
                except ContextUnavailable as error:
                    log.warning("review refused: context unavailable", error=str(error))
                    answer = _unavailable(review_in, str(error))
                else:
                    answer = _reviewed(review_in, ctx, webhook)
                    if webhook == "mutate":
                        _start_trace(answer, review_in)
            allowed = bool((answer.get("response") or {}).get("allowed"))
            kind = str(((review_in.get("request") or {}).get("kind") or {}).get("kind") or "")
            REVIEWS.labels(webhook, kind, str(allowed).lower()).inc()
            if webhook == "validate" and kind in ("Job", "Queue", "PodGroup"):
                audit(answer, review_in)
            await failpoints.hit("admission.before_response")
            return _json(answer)

        return handle

    return Starlette(
        routes=[
            Route("/mutate", endpoint("mutate"), methods=["POST"]),
            Route("/validate", endpoint("validate"), methods=["POST"]),
        ]
    )


async def _limited_body(request: Request, limit: int) -> bytes | None:
    """The body, or None as soon as it passes `limit`: never held whole when too large."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _reviewed(review_in: dict[str, Any], ctx: Any, webhook: core.Webhook) -> dict[str, Any]:
    """The review's answer; a refusal, never a 500, if the pure core meets a shape it did not
    expect (the API server would turn a 500 into "Internal error occurred" and retry nothing)."""
    try:
        return core.review(review_in, ctx, webhook)
    except Exception as error:  # the core is pure: a crash here is a bug, not an outage
        log.exception("review failed", webhook=webhook)
        request = review_in.get("request")
        refusal = _refusal(400, f"the object could not be reviewed: {type(error).__name__}")
        refusal["response"]["uid"] = str(request.get("uid", "")) if isinstance(request, dict) else ""
        return refusal


def _start_trace(answer: dict[str, Any], review_in: dict[str, Any]) -> None:
    """A new Job's trace begins here: the root span, and its context on the Job as an annotation
    (added to the defaulting patch) for the services downstream. Nothing when tracing is off."""
    request = review_in.get("request") or {}
    response = answer.get("response") or {}
    obj = request.get("object")
    if (
        not tracing.enabled()
        or not response.get("allowed")
        or request.get("operation") != "CREATE"
        or (request.get("kind") or {}).get("kind") != "Job"
        or not isinstance(obj, dict)
        or not isinstance(obj.get("metadata"), dict)
    ):
        return
    job = KubeObject(obj)
    context = tracing.start(
        "admission: Job admitted",
        {
            "k8s.namespace.name": str(request.get("namespace") or ""),
            "k8s.job.name": str(job.meta.get("name")),
        },
    )
    operations = orjson.loads(base64.b64decode(response["patch"])) if response.get("patch") else []
    if isinstance(job.meta.get("annotations"), dict) or any(
        op.get("path") == "/metadata/annotations" for op in operations
    ):
        key = TRACEPARENT.replace("~", "~0").replace("/", "~1")
        operations.append({"op": "add", "path": f"/metadata/annotations/{key}", "value": context})
    else:
        operations.append({"op": "add", "path": "/metadata/annotations", "value": {TRACEPARENT: context}})
    response["patchType"] = "JSONPatch"
    response["patch"] = base64.b64encode(orjson.dumps(operations)).decode("ascii")


def _json(document: dict[str, Any], status: int = 200) -> Response:
    return Response(orjson.dumps(document), status_code=status, media_type="application/json")


def _refusal(code: int, message: str) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "", "allowed": False, "status": {"code": code, "message": message}},
    }


def _unavailable(review_in: dict[str, Any], reason: str) -> dict[str, Any]:
    """A refusal the user can retry: the decision needed the API server, which did not answer."""
    uid = str((review_in.get("request") or {}).get("uid") or "")
    status = {
        "status": "Failure",
        "code": 503,
        "reason": "ServiceUnavailable",
        "message": f"admission could not check this request, try again: {reason}",
    }
    answer = {"uid": uid, "allowed": False, "status": status}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": answer}


def _forget(background: set[asyncio.Task[None]]) -> Callable[[asyncio.Task[None]], None]:
    def done(task: asyncio.Task[None]) -> None:
        background.discard(task)
        with contextlib.suppress(asyncio.CancelledError):
            if task.exception():
                log.warning("audit event not published", error=str(task.exception()))

    return done
