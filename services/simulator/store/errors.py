"""Kubernetes API errors as the simulator raises them and as clients receive them.

The store and the admission chain raise `ApiError`; the HTTP layer turns it into a `Status`
object with the same code, reason, message and field causes the real apiserver would send, so
clients (kubectl, the official Python client) react to it exactly as they would against a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FieldCause:
    """One invalid field of a 422 answer (`status.details.causes[]`)."""

    reason: str
    message: str
    field: str


@dataclass
class ApiError(Exception):
    """A failed request: becomes a `Status` object with `code` as the HTTP status."""

    code: int
    reason: str
    message: str
    name: str = ""
    kind: str = ""
    group: str = ""
    causes: list[FieldCause] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def to_status(self) -> dict[str, Any]:
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = [
                {"reason": c.reason, "message": c.message, "field": c.field} for c in self.causes
            ]
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if details:
            status["details"] = details
        return status


def qualified(resource: str, group: str) -> str:
    """`pods` for the core group, `jobs.batch.volcano.sh` otherwise, as error messages name them."""
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{qualified(resource, group)} "{name}" not found', name, resource, group
    )


def already_exists(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(resource, group)} "{name}" already exists',
        name,
        resource,
        group,
    )


def conflict(resource: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}',
        name,
        resource,
        group,
    )


STALE_OBJECT = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(kind: str, group: str, name: str, causes: list[FieldCause]) -> ApiError:
    """422 Invalid: `Pod "x" is invalid: metadata.name: Required value: ...`."""
    summary = ", ".join(f"{c.field}: {c.message}" for c in causes)
    if len(causes) > 1:
        summary = f"[{summary}]"
    message = (
        f'{kind}.{group} "{name}" is invalid: {summary}'
        if group
        else (f'{kind} "{name}" is invalid: {summary}')
    )
    return ApiError(422, "Invalid", message, name, kind, group, causes)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}")
