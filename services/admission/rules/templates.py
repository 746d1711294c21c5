"""A task's pod template checked the way Kubernetes checks a PodTemplate, for the common faults.

Called by `jobs.validate_job_create` for every task. Volcano runs Kubernetes' full PodTemplate
validation; this covers what users actually get wrong (no containers, missing or duplicate
names, missing images, unknown restart policy, bad quantities, requests above limits) with
Kubernetes' wording, prefixed as Volcano prefixes it (`spec.task[<i>].`).
"""

from __future__ import annotations

from typing import Any

from shared.domain.quantity import QuantityError, parse_quantity

from .errors import FieldError, Reason, go_value
from .names import dns1123_label_errors

RESTART_POLICIES = ("Always", "OnFailure", "Never")


def validate_template(template: Any, index: int) -> list[FieldError]:
    """Errors in task `index`'s template; the first error carries Volcano's whole wording."""
    found: list[tuple[str, str, Reason]] = []  # (go path under "template", go text, reason)
    spec = template.get("spec") if isinstance(template, dict) else None
    spec = spec if isinstance(spec, dict) else {}
    containers = spec.get("containers") or []
    if not containers:
        found.append(("spec.containers", "Required value", "FieldValueRequired"))
    for kind in ("initContainers", "containers"):
        names: set[str] = set()
        for position, container in enumerate(spec.get(kind) or []):
            container = container if isinstance(container, dict) else {}
            found.extend(_container_errors(container, f"spec.{kind}[{position}]", names))
    restart = spec.get("restartPolicy")
    if restart is not None and restart not in RESTART_POLICIES:
        supported = ", ".join(go_value(policy) for policy in RESTART_POLICIES)
        found.append(
            (
                "spec.restartPolicy",
                f"Unsupported value: {go_value(restart)}: supported values: {supported}",
                "FieldValueNotSupported",
            )
        )
    if not found:
        return []
    text = f"spec.task[{index}]." + "".join(f"template.{path}: {message}. " for path, message, _ in found)
    return [
        FieldError(
            f"spec.tasks[{index}].template.{path}",
            message,
            reason,
            text if position == 0 else "",
        )
        for position, (path, message, reason) in enumerate(found)
    ]


def _container_errors(container: dict[str, Any], path: str, names: set[str]) -> list[tuple[str, str, Reason]]:
    found: list[tuple[str, str, Reason]] = []
    name = container.get("name")
    if not name:
        found.append((f"{path}.name", "Required value", "FieldValueRequired"))
    elif label_errors := dns1123_label_errors(str(name)):
        found.append(
            (
                f"{path}.name",
                f"Invalid value: {go_value(name)}: " + ", ".join(label_errors),
                "FieldValueInvalid",
            )
        )
    elif name in names:
        found.append((f"{path}.name", f"Duplicate value: {go_value(name)}", "FieldValueDuplicate"))
    if name:
        names.add(str(name))
    if not container.get("image"):
        found.append((f"{path}.image", "Required value", "FieldValueRequired"))
    found.extend(_resource_errors(container.get("resources"), f"{path}.resources"))
    return found


def _resource_errors(resources: Any, path: str) -> list[tuple[str, str, Reason]]:
    if not isinstance(resources, dict):
        return []
    found: list[tuple[str, str, Reason]] = []
    parsed: dict[str, dict[str, Any]] = {}
    for part in ("limits", "requests"):
        parsed[part] = {}
        for resource, amount in (resources.get(part) or {}).items():
            try:
                value = parse_quantity(amount)
            except (QuantityError, TypeError):
                found.append(
                    (
                        f"{path}.{part}[{resource}]",
                        f"Invalid value: {go_value(amount)}: must be a valid resource quantity",
                        "FieldValueInvalid",
                    )
                )
                continue
            if value < 0:
                found.append(
                    (
                        f"{path}.{part}[{resource}]",
                        f"Invalid value: {go_value(str(amount))}: must be greater than or equal to 0",
                        "FieldValueInvalid",
                    )
                )
            parsed[part][resource] = value
    for resource, request in parsed["requests"].items():
        limit = parsed["limits"].get(resource)
        if limit is not None and request > limit:
            written_request = resources["requests"][resource]
            written_limit = resources["limits"][resource]
            found.append(
                (
                    f"{path}.requests",
                    f"Invalid value: {go_value(str(written_request))}: must be less than or "
                    f"equal to {resource} limit of {written_limit}",
                    "FieldValueInvalid",
                )
            )
    return found
