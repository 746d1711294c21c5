"""The OpenAPI documents: v3 per group-version (`/openapi/v3/...`) and v2 (`/openapi/v2`).

They carry every served kind's schema (openapi_schemas.py), so `kubectl explain pods.spec` and
`kubectl explain vcjob.spec.tasks` work, and each kind's PATCH operation says it accepts
`fieldValidation`, so `kubectl apply` leaves validation to the server instead of downloading the
v2 document to validate on the client. Built once per process: the kinds never change.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from services.simulator.api.openapi_schemas import components, schema_name
from services.simulator.store.api_resources import KINDS, Kind

INFO = {"title": "Kubernetes (Phalanx simulator)", "version": "v1.31.0"}
_FIELD_VALIDATION = {
    "name": "fieldValidation",
    "in": "query",
    "description": "Strict, Warn or Ignore: what to do with unknown and duplicate fields.",
    "schema": {"type": "string", "uniqueItems": True},
}


def _gv_path(kind: Kind) -> str:
    return f"apis/{kind.group}/{kind.version}" if kind.group else f"api/{kind.version}"


def root() -> dict[str, Any]:
    paths = {_gv_path(k): {"serverRelativeURL": f"/openapi/v3/{_gv_path(k)}?hash=simulator"} for k in KINDS}
    return {"paths": paths}


@cache
def group_version(path: str) -> dict[str, Any] | None:
    served = [k for k in KINDS if _gv_path(k) == path]
    if not served:
        return None
    paths: dict[str, Any] = {}
    for kind in served:
        scope = "/namespaces/{namespace}" if kind.namespaced else ""
        reference = {"$ref": f"#/components/schemas/{schema_name(kind)}"}
        paths[f"/{path}{scope}/{kind.plural}/{{name}}"] = {
            "patch": {
                "operationId": f"patch{kind.kind}",
                "parameters": [_FIELD_VALIDATION],
                "responses": {
                    "200": {"description": "OK", "content": {"application/json": {"schema": reference}}}
                },
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {
                    "group": kind.group,
                    "version": kind.version,
                    "kind": kind.kind,
                },
            },
        }
    return {
        "openapi": "3.0.0",
        "info": INFO,
        "paths": paths,
        "components": {"schemas": components(served, "#/components/schemas/")},
    }


@cache
def v2() -> dict[str, Any]:
    """Swagger 2.0 with every kind's definition, for clients that read only v2."""
    return {
        "swagger": "2.0",
        "info": INFO,
        "paths": {},
        "definitions": components(list(KINDS), "#/definitions/"),
    }
