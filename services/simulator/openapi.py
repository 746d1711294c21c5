"""The smallest OpenAPI v3 documents that let plain `kubectl apply -f` work.

kubectl validates a manifest on the server when the server's OpenAPI v3 says its PATCH
operations accept `fieldValidation`; otherwise it downloads the full OpenAPI v2 schema to
validate on the client. So for every served kind this publishes only its PATCH operation, the
group-version-kind extension and that query parameter: kubectl then sends the manifest and
leaves validation to the simulator (which checks names and required fields, not every field).
"""

from __future__ import annotations

from typing import Any

from services.simulator.kinds import KINDS, Kind


def _gv_path(kind: Kind) -> str:
    return f"apis/{kind.group}/{kind.version}" if kind.group else f"api/{kind.version}"


def root() -> dict[str, Any]:
    paths = {_gv_path(k): {"serverRelativeURL": f"/openapi/v3/{_gv_path(k)}?hash=simulator"} for k in KINDS}
    return {"paths": paths}


def group_version(path: str) -> dict[str, Any] | None:
    served = [k for k in KINDS if _gv_path(k) == path]
    if not served:
        return None
    field_validation = {
        "name": "fieldValidation",
        "in": "query",
        "description": "Accepted and recorded; the simulator validates names and required fields.",
        "schema": {"type": "string", "uniqueItems": True},
    }
    paths: dict[str, Any] = {}
    for kind in served:
        scope = "/namespaces/{namespace}" if kind.namespaced else ""
        paths[f"/{path}{scope}/{kind.plural}/{{name}}"] = {
            "patch": {
                "operationId": f"patch{kind.kind}",
                "parameters": [field_validation],
                "responses": {"200": {"description": "OK"}},
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
        "info": {"title": "Kubernetes (Phalanx simulator)", "version": "v1.31.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }
