"""What a request carries besides its URL, decoded as kube-apiserver decodes it: JSON and
apply-patch YAML bodies (depth-limited), DeleteOptions from the body and the query, and `dryRun`.
Used by the HTTP layer (http_api.py); raises `ApiError` 400 for what cannot be read.
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml

from services.simulator.store import errors
from shared.volcano.schema import MAX_DEPTH, shown, too_deep

# The nesting orjson decodes; deeper bodies fail to decode at all.
JSON_DEPTH = 1024


def json_body(body: bytes) -> Any:
    if not body:
        return {}
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        if "depth" in str(error):
            message = f"the request body is not valid JSON: nesting deeper than {JSON_DEPTH} levels"
            raise errors.bad_request(message) from None
        raise errors.bad_request(f"the request body is not valid JSON: {error}") from None
    # Refused here, before webhooks and storage: every encoder after this point has a depth limit.
    if (path := too_deep(decoded)) is not None:
        raise errors.bad_request(f"{shown(path)}: Invalid value: nesting deeper than {MAX_DEPTH} levels")
    return decoded


def yaml_body(body: bytes) -> Any:
    """An apply-patch+yaml body (JSON is YAML too), held to the same depth limit as JSON."""
    try:
        text = body.decode()
        # Aliases let a small document expand without bound (the "billion laughs"); none is needed.
        if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=yaml.SafeLoader)):
            raise errors.bad_request("the request body uses YAML aliases, which are not accepted")
        decoded = yaml.safe_load(text) if body else {}
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise errors.bad_request(f"the request body is not valid YAML: {error}") from None
    if (path := too_deep(decoded)) is not None:
        raise errors.bad_request(f"{shown(path)}: Invalid value: nesting deeper than {MAX_DEPTH} levels")
    return decoded


def dry_run(params: dict[str, str]) -> bool:
    """dryRun=All: the request is checked, admitted and answered as if made, but nothing is
    stored (https://kubernetes.io/docs/reference/using-api/api-concepts/#dry-run)."""
    given = params.get("dryRun")
    if given is None:
        return False
    if given != "All":
        raise errors.bad_request(f'Invalid dry run value: "{given}": valid values are: "All"')
    return True


def delete_options(params: dict[str, str], body: bytes) -> dict[str, Any]:
    options = json_body(body)
    if not isinstance(options, dict):
        options = {}
    for option in ("propagationPolicy", "gracePeriodSeconds", "orphanDependents"):
        if params.get(option):
            options[option] = params[option]
    if isinstance(options.get("orphanDependents"), str):
        options["orphanDependents"] = options["orphanDependents"] == "true"
    return options
