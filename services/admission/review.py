"""AdmissionReview in, AdmissionReview out: the pure core of the admission webhooks.

The HTTPS shell decodes the request body, loads an `AdmissionContext`, and calls `mutate` (for
the mutating webhook paths) or `validate` (for the validating ones), then writes the returned
dict as JSON. Dispatch is by the request's kind and operation; kinds that are not ours are
allowed untouched, so an admission rule can never block unrelated objects. Mutations are
returned as a base64 JSONPatch; denials as a Kubernetes Status whose message is Volcano's exact
text followed by each cause's field path and rule, and whose causes name each field.

Before any rule reads an object, its shapes and bounds are checked against the kind's structural
schema (`shared.volcano.schema`): a list where an object belongs, an int32 count beyond range, a
quantity no resource vector holds, a NUL in a string or nesting past the depth limit is refused
with a 422 naming the field, as the API server refuses a CRD schema violation. A refusal message
is cut at MAX_MESSAGE_CHARS and the causes at MAX_CAUSES, so no answer echoes a hostile object.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any, Literal

import orjson

from shared.volcano import schema
from shared.volcano.objects import KubeObject

from .rules.context import AdmissionContext
from .rules.errors import FieldError, MessageStyle, compose, with_causes
from .rules.hypernodes import STYLE as HYPERNODE_STYLE
from .rules.hypernodes import validate_hypernode
from .rules.jobs import (
    CREATE_STYLE,
    UPDATE_STYLE,
    default_job,
    validate_job_create,
    validate_job_update,
)
from .rules.patch import diff
from .rules.podgroups import STYLE as PODGROUP_STYLE
from .rules.podgroups import default_podgroup, validate_podgroup_create, validate_podgroup_update
from .rules.pods import STYLE as POD_STYLE
from .rules.pods import validate_pod_create
from .rules.queues import STYLE as QUEUE_STYLE
from .rules.queues import (
    default_queue,
    validate_queue_create,
    validate_queue_delete,
    validate_queue_update,
)

Webhook = Literal["mutate", "validate"]
ADMISSION_API_VERSION = "admission.k8s.io/v1"
# Volcano sends denials without a code; the API server then answers 403, so clients of
# Volcano see 403 and so do ours.
DENIED_CODE = 403
TOO_LARGE_CODE = 413
BAD_REQUEST_CODE = 400
INVALID_CODE = 422
MAX_MESSAGE_CHARS = 4096
MAX_CAUSES = 20
OUR_KINDS = {
    ("batch.volcano.sh", "Job"): "jobs",
    ("scheduling.volcano.sh", "Queue"): "queues",
    ("scheduling.volcano.sh", "PodGroup"): "podgroups",
    ("topology.volcano.sh", "HyperNode"): "hypernodes",
}


def mutate(admission_review: Mapping[str, Any], ctx: AdmissionContext) -> dict[str, Any]:
    return review(admission_review, ctx, "mutate")


def validate(admission_review: Mapping[str, Any], ctx: AdmissionContext) -> dict[str, Any]:
    return review(admission_review, ctx, "validate")


def review(admission_review: Mapping[str, Any], ctx: AdmissionContext, webhook: Webhook) -> dict[str, Any]:
    """The AdmissionReview (v1) answering `admission_review["request"]`."""
    request = admission_review.get("request")
    if not isinstance(request, Mapping):
        response = _denied("AdmissionReview has no request", "BadRequest", BAD_REQUEST_CODE, [], {})
    else:
        response = _respond(request, ctx, webhook)
        response["uid"] = str(request.get("uid", ""))
    return {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "response": response}


def _respond(request: Mapping[str, Any], ctx: AdmissionContext, webhook: Webhook) -> dict[str, Any]:
    kind = request.get("kind")
    if not isinstance(kind, Mapping):
        return _allowed()  # no kind we could own
    if (kind.get("group", ""), kind.get("kind")) == ("", "Pod"):
        return _pod_review(request, ctx, webhook)
    resource = OUR_KINDS.get((kind.get("group", ""), kind.get("kind", "")))
    operation = str(request.get("operation", ""))
    if resource is None or request.get("subResource"):
        return _allowed()  # not ours, or a status write: never in the way
    details = {
        "name": schema.shown(request.get("name") or ""),
        "group": kind.get("group", ""),
        "kind": kind.get("kind", ""),
    }
    new, old = request.get("object"), request.get("oldObject")
    if operation in ("CREATE", "UPDATE"):
        if not isinstance(new, dict):
            return _denied("the request carries no object", "BadRequest", 400, [], details)
        if violations := schema.check(details["kind"], new):
            return _schema_denial(violations, {**details, "name": details["name"] or _name_of(new)})
        try:
            size = len(orjson.dumps(new))
        except TypeError as error:  # e.g. integers beyond 64 bits
            return _denied(f"malformed {details['kind']}: {error}", "BadRequest", 400, [], details)
        if size > ctx.max_object_bytes:
            message = (
                f"{details['kind']} is too large: {size} bytes, the limit is {ctx.max_object_bytes} bytes"
            )
            return _denied(message, "RequestEntityTooLarge", TOO_LARGE_CODE, [], details)
    try:
        if webhook == "mutate":
            return _mutation(resource, operation, new, ctx)
        return _validation(resource, operation, new, old, request, ctx, details)
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        # A shape the schema would refuse (a list where an object belongs, ...): refuse it
        # plainly rather than fail the webhook call.
        message = f"malformed {details['kind']}: {type(error).__name__}: {schema.shown(error)}"
        return _denied(message, "BadRequest", BAD_REQUEST_CODE, [], details)


def _pod_review(request: Mapping[str, Any], ctx: AdmissionContext, webhook: Webhook) -> dict[str, Any]:
    """Pods: only a validating CREATE of a pod naming our scheduler is judged; the API server has
    already checked the pod's shape, so no schema or size check here."""
    pod = request.get("object")
    if webhook != "validate" or request.get("operation") != "CREATE" or request.get("subResource"):
        return _allowed()
    if not isinstance(pod, Mapping) or not (errors := validate_pod_create(pod, ctx)):
        return _allowed()
    details = {"name": schema.shown(request.get("name") or _name_of(pod)), "group": "", "kind": "Pod"}
    return _denied(with_causes(compose(errors, POD_STYLE), errors), "Invalid", DENIED_CODE, errors, details)


def _name_of(obj: Mapping[str, Any]) -> str:
    return schema.shown(KubeObject(obj).name)


def _schema_denial(violations: list[schema.SchemaViolation], details: Mapping[str, Any]) -> dict[str, Any]:
    """The API server's answer to a CRD schema violation: `<Kind> "<name>" is invalid: [...]`."""
    errors = [FieldError(v.field, v.message, v.reason) for v in violations]
    texts = [v.text for v in violations]
    listed = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    message = f'{details["kind"]} "{schema.shown(details["name"])}" is invalid: {listed}'
    return _denied(message, "Invalid", INVALID_CODE, errors, details)


def _mutation(resource: str, operation: str, obj: Any, ctx: AdmissionContext) -> dict[str, Any]:
    if operation != "CREATE" or resource == "hypernodes":
        return _allowed()  # Volcano mutates on CREATE only, and never a HyperNode
    defaulters: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
        "jobs": lambda job: default_job(job, scheduler_name=ctx.scheduler_name),
        "queues": default_queue,
        "podgroups": lambda podgroup: default_podgroup(podgroup, ctx),
    }
    operations = diff(obj, defaulters[resource](obj))
    if not operations:
        return _allowed()
    response = _allowed()
    response["patchType"] = "JSONPatch"
    response["patch"] = base64.b64encode(orjson.dumps(operations)).decode("ascii")
    return response


def _validation(
    resource: str,
    operation: str,
    new: Any,
    old: Any,
    request: Mapping[str, Any],
    ctx: AdmissionContext,
    details: dict[str, Any],
) -> dict[str, Any]:
    errors: list[FieldError] = []
    style: MessageStyle = "concat"
    reason = "Invalid"
    if resource == "jobs" and operation == "CREATE":
        errors, style = validate_job_create(new, ctx), CREATE_STYLE
    elif resource == "jobs" and operation == "UPDATE" and isinstance(old, dict):
        errors, style = validate_job_update(old, new, ctx), UPDATE_STYLE
    elif resource == "queues" and operation == "CREATE":
        errors, style = validate_queue_create(new, ctx), QUEUE_STYLE
    elif resource == "queues" and operation == "UPDATE" and isinstance(old, dict):
        errors, style = validate_queue_update(old, new, ctx), QUEUE_STYLE
    elif resource == "queues" and operation == "DELETE":
        name = str(request.get("name") or KubeObject(old or {}).name)
        errors, style, reason = validate_queue_delete(name, ctx), QUEUE_STYLE, "Forbidden"
    elif resource == "podgroups" and operation == "CREATE":
        errors, style = validate_podgroup_create(new, ctx), PODGROUP_STYLE
    elif resource == "podgroups" and operation == "UPDATE" and isinstance(old, dict):
        errors, style = validate_podgroup_update(old, new), PODGROUP_STYLE
    elif resource == "hypernodes" and operation in ("CREATE", "UPDATE"):
        errors, style = validate_hypernode(new), HYPERNODE_STYLE
    if not errors:
        return _allowed()
    message = with_causes(compose(errors, style), errors)
    return _denied(message, reason, DENIED_CODE, errors, details)


def _allowed() -> dict[str, Any]:
    return {"allowed": True}


def _denied(
    message: str, reason: str, code: int, errors: list[FieldError], details: Mapping[str, Any]
) -> dict[str, Any]:
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS] + f"... ({len(message) - MAX_MESSAGE_CHARS} more characters)"
    status: dict[str, Any] = {
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if errors or details:
        causes = [_short(error.to_cause()) for error in errors[:MAX_CAUSES]]
        status["details"] = {**details, "causes": causes}
    return {"allowed": False, "status": status}


def _short(cause: dict[str, str]) -> dict[str, str]:
    return {key: value[:MAX_MESSAGE_CHARS] for key, value in cause.items()}
