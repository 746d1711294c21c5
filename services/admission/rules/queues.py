"""Queue admission: defaulting on CREATE; validation on CREATE, UPDATE and DELETE.

Called by `review.py` for `scheduling.volcano.sh/v1beta1` Queues. The rules follow Volcano's
queue webhook stage by stage (field checks, then parent, root protection, hierarchy resources),
stopping at the first stage that fails, so messages are composed with the "aggregate" style.
Queue data other than the reviewed object comes from `AdmissionContext.queues`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from shared.domain.quantity import QuantityError, parse_quantity
from shared.domain.resources import Resources
from shared.volcano import DEFAULT_QUEUE, ROOT_QUEUE
from shared.volcano.keys import HIERARCHY, HIERARCHY_WEIGHTS
from shared.volcano.objects import QueueObject

from .context import AdmissionContext, QueueAdmissionFacts, ResourceAmounts
from .errors import FieldError, MessageStyle, go_invalid
from .queue_resources import add, below_somewhere, describe, format_one, named, volcano_amounts

STYLE: MessageStyle = "aggregate"
MAX_WEIGHT = 65535


def default_queue(queue: Mapping[str, Any]) -> dict[str, Any]:
    """The queue with Volcano's CREATE defaults (a new dict; `queue` is untouched)."""
    result = copy.deepcopy(dict(queue))
    annotations = (result.get("metadata") or {}).get("annotations") or {}
    hierarchy, weights = annotations.get(HIERARCHY, ""), annotations.get(HIERARCHY_WEIGHTS, "")
    if hierarchy and weights and not hierarchy.startswith(ROOT_QUEUE):
        annotations[HIERARCHY] = f"root/{hierarchy}"
        annotations[HIERARCHY_WEIGHTS] = f"1/{weights}"
    spec = result.setdefault("spec", {})
    if spec.get("reclaimable") is None:
        spec["reclaimable"] = True
    if not spec.get("weight"):
        spec["weight"] = 1
    return result


def validate_queue_create(queue: Mapping[str, Any], ctx: AdmissionContext) -> list[FieldError]:
    return _validate(queue, None, ctx)


def validate_queue_update(
    old: Mapping[str, Any], new: Mapping[str, Any], ctx: AdmissionContext
) -> list[FieldError]:
    return _validate(new, old, ctx)


def validate_queue_delete(name: str, ctx: AdmissionContext) -> list[FieldError]:
    """Why the queue may not be deleted: built-in, still in use, or a parent."""
    if name in (DEFAULT_QUEUE, ROOT_QUEUE):
        return [_refusal(f"`{name}` queue can not be deleted")]
    view = ctx.queues.get(name)
    if view is None:
        return []  # unknown here: let the API server answer for an object it holds
    if ctx.enable_queue_allocated_pods_check and view.allocated_pods > 0:
        message = f"queue {name} cannot be deleted because it has allocated Pods: {view.allocated_pods}"
        return [_refusal(message)]
    if jobs := ctx.jobs_per_queue.get(name, 0):
        return [_refusal(f"queue {name} cannot be deleted because it still holds {jobs} jobs")]
    if children := ctx.children(name):
        names = ", ".join(child.name for child in children)
        message = f"queue {name} can not be deleted because it has {len(children)} child queues: {names}"
        return [_refusal(message)]
    return []


def _refusal(message: str) -> FieldError:
    return FieldError("metadata.name", message, "FieldValueForbidden")


def _validate(
    queue: Mapping[str, Any], old: Mapping[str, Any] | None, ctx: AdmissionContext
) -> list[FieldError]:
    fields = _field_errors(queue, ctx)
    if fields:
        return fields
    view = QueueAdmissionFacts.from_queue(queue)
    old_view = QueueAdmissionFacts.from_queue(old) if old is not None else None
    parent_changed = old_view is None or old_view.parent != view.parent
    if parent_changed and (parent_error := _parent_error(view, ctx)):
        return [FieldError("spec.parent", parent_error)]
    root_protected = view.name == ROOT_QUEUE and ctx.enable_root_queue_protection
    if old_view is not None and root_protected and _resources_of(view) != _resources_of(old_view):
        message = "root queue's resource attributes (capability, deserved, guarantee) cannot be modified"
        return [FieldError("spec", message, "FieldValueForbidden")]
    recheck = old_view is None or _resources_changed(view, old_view)
    if view.name != ROOT_QUEUE and recheck and (hierarchy_error := _hierarchy_error(view, ctx)):
        return [FieldError("spec", hierarchy_error)]
    return []


def _resources_of(view: QueueAdmissionFacts) -> tuple[Resources, Resources, Resources]:
    return (
        Resources.parse(view.capability),
        Resources.parse(view.deserved),
        Resources.parse(view.guarantee),
    )


def _resources_changed(view: QueueAdmissionFacts, old: QueueAdmissionFacts) -> bool:
    return view.parent != old.parent or _resources_of(view) != _resources_of(old)


def _field_errors(queue: Mapping[str, Any], ctx: AdmissionContext) -> list[FieldError]:
    spec = queue.get("spec") or {}
    errors: list[FieldError] = []
    weight = spec.get("weight")
    if weight is not None and (not isinstance(weight, int) or not 0 < weight <= MAX_WEIGHT):
        detail = "queue weight must be a positive integer"
        if isinstance(weight, int) and weight > MAX_WEIGHT:
            detail = f"queue weight must be no more than {MAX_WEIGHT}"
        errors.append(FieldError("spec.weight", go_invalid("requestBody.spec.weight", weight, detail)))
    lists = {
        "capability": spec.get("capability") or {},
        "deserved": spec.get("deserved") or {},
        "guarantee.resource": (spec.get("guarantee") or {}).get("resource") or {},
    }
    parsed: dict[str, dict[str, Any]] = {}
    for part, amounts in lists.items():
        parsed[part] = {}
        for name, written in amounts.items():
            path = f"requestBody.spec.{part}.{name}"
            try:
                value = parse_quantity(written)
            except (QuantityError, TypeError) as error:
                errors.append(FieldError(f"spec.{part}[{name}]", go_invalid(path, written, str(error))))
                continue
            if value < 0:
                detail = "must be greater than or equal to 0"
                errors.append(FieldError(f"spec.{part}[{name}]", go_invalid(path, str(written), detail)))
            parsed[part][name] = value
    errors += _share_errors(lists, parsed)
    state = (queue.get("status") or {}).get("state")
    if state and state not in ("Open", "Closed"):
        detail = "queue state must be in [Open Closed]"
        errors.append(FieldError("status.state", go_invalid("requestBody.spec.state", state, detail)))
    errors += _hierarchy_annotation_errors(queue, ctx)
    return errors


def _share_errors(
    lists: Mapping[str, ResourceAmounts], parsed: Mapping[str, Mapping[str, Any]]
) -> list[FieldError]:
    """guarantee <= deserved <= capability, resource by resource (deserved must name every
    guaranteed resource)."""
    errors: list[FieldError] = []
    deserved, capability = parsed["deserved"], parsed["capability"]
    for name, guaranteed in parsed["guarantee.resource"].items():
        path, field = f"requestBody.spec.deserved.{name}", f"spec.deserved[{name}]"
        shown = lists["guarantee.resource"][name]
        if name not in deserved:
            detail = f"deserved[{name}] must be >= guarantee[{name}]={shown}"
            errors.append(FieldError(field, go_invalid(path, "<nil>", detail), "FieldValueRequired"))
        elif deserved[name] < guaranteed:
            written = lists["deserved"][name]
            detail = f"deserved[{name}]={written} must be >= guarantee[{name}]={shown}"
            errors.append(FieldError(field, go_invalid(path, str(written), detail)))
    for name, share in deserved.items():
        if name in capability and share > capability[name]:
            written, limit = lists["deserved"][name], lists["capability"][name]
            detail = f"deserved[{name}]={written} must be <= capability[{name}]={limit}"
            path = f"requestBody.spec.deserved.{name}"
            errors.append(FieldError(f"spec.deserved[{name}]", go_invalid(path, str(written), detail)))
    return errors


def _hierarchy_annotation_errors(queue: Mapping[str, Any], ctx: AdmissionContext) -> list[FieldError]:
    view = QueueObject(queue)
    annotations = view.annotations
    hierarchy, weights = annotations.get(HIERARCHY, ""), annotations.get(HIERARCHY_WEIGHTS, "")
    if not hierarchy and not weights:
        return []
    field, path = "metadata.annotations", "requestBody.metadata.annotations"
    if len(hierarchy.split("/")) != len(weights.split("/")):
        detail = f"{HIERARCHY} must have the same length with {HIERARCHY_WEIGHTS}"
        return [FieldError(field, go_invalid(path, hierarchy, detail))]
    for weight in weights.split("/"):
        try:
            number = float(weight)
        except ValueError:
            detail = (
                f"{weight} in the {weights} is invalid number: "
                f'strconv.ParseFloat: parsing "{weight}": invalid syntax'
            )
            return [FieldError(field, go_invalid(path, weights, detail))]
        if number <= 0:
            detail = f"{weight} in the {weights} must be larger than 0"
            return [FieldError(field, go_invalid(path, weights, detail))]
    name = view.meta.get("name")
    for other in sorted(ctx.queues.values(), key=lambda view: view.name):
        if other.hierarchy and other.name != name and other.hierarchy.startswith(hierarchy + "/"):
            detail = (
                f"{hierarchy} is not allowed to be in the sub path of {other.hierarchy} of queue {other.name}"
            )
            return [FieldError(field, go_invalid(path, hierarchy, detail))]
    return []


def _parent_error(view: QueueAdmissionFacts, ctx: AdmissionContext) -> str | None:
    """Volcano's checks of a new or changed parent: not itself, not too deep, exists, and
    not a queue that already runs pods of its own."""
    if view.parent in ("", ROOT_QUEUE):
        return None
    if view.parent == view.name:
        return f"queue {view.name} cannot use itself as parent"
    depth, parent = 1, view.parent
    while parent not in ("", ROOT_QUEUE):
        depth += 1
        if depth > ctx.max_queue_depth:
            return f"queue {view.name} exceeds the maximum allowed depth of {ctx.max_queue_depth}"
        ancestor = ctx.queues.get(parent)
        if ancestor is None:
            return (
                f"failed to get parent queue {parent} of queue {view.name}: "
                f'queue.scheduling.volcano.sh "{parent}" not found'
            )
        parent = ancestor.parent
    parent_view = ctx.queues[view.parent]
    if not ctx.children(parent_view.name) and parent_view.allocated_pods > 0:
        return (
            f"queue {parent_view.name} cannot be the parent queue of queue {view.name} "
            f"because it has allocated Pods: {parent_view.allocated_pods}"
        )
    return None


def _hierarchy_error(view: QueueAdmissionFacts, ctx: AdmissionContext) -> str | None:
    if view.parent not in ("", ROOT_QUEUE):
        parent = ctx.queues.get(view.parent)
        if parent is None:
            return (
                f'parent queue {view.parent} not found: queue.scheduling.volcano.sh "{view.parent}" not found'
            )
        if error := _above_ancestor(view, ctx):
            return error
        siblings = [other for other in ctx.children(parent.name) if other.name != view.name]
        if error := _sum_error(parent, [*siblings, view], f"parent queue {parent.name}"):
            return error
    children = [child for child in ctx.children(view.name) if child.name != view.name]
    if children:
        return _children_error(view, children, ctx)
    return None


def _above_ancestor(view: QueueAdmissionFacts, ctx: AdmissionContext) -> str | None:
    own = volcano_amounts(view.capability)
    for name in named(own):
        parent, limit = view.parent, None
        while parent not in ("", ROOT_QUEUE) and limit is None and parent in ctx.queues:
            ancestor = ctx.queues[parent]
            value = volcano_amounts(ancestor.capability).get(name, 0.0)
            limit = value if value > 0 else None
            parent = ancestor.parent
        if limit is not None and own[name] > limit:
            return (
                f"queue {view.name} capability[{name}]={format_one(name, own[name])} "
                f"exceeds its ancestor's capability={format_one(name, limit)}"
            )
    return None


def _sum_error(parent: QueueAdmissionFacts, children: list[QueueAdmissionFacts], label: str) -> str | None:
    """Children's guarantees, then deserved shares, summed one child at a time as Volcano
    does, must stay within the parent's."""
    limits = {
        "guarantee": volcano_amounts(parent.guarantee),
        "deserved": volcano_amounts(parent.deserved),
    }
    totals = {"guarantee": volcano_amounts(None), "deserved": volcano_amounts(None)}
    for child in children:
        for kind, amounts in (("guarantee", child.guarantee), ("deserved", child.deserved)):
            totals[kind] = add(totals[kind], volcano_amounts(amounts))
            if below_somewhere(limits[kind], totals[kind]):
                return (
                    f"{label} validation failed: sum of children's {kind} "
                    f"({describe(totals[kind])}) exceeds parent's {kind} limit "
                    f"({describe(limits[kind])})"
                )
    return None


def _children_error(
    view: QueueAdmissionFacts, children: list[QueueAdmissionFacts], ctx: AdmissionContext
) -> str | None:
    own = volcano_amounts(view.capability)
    if view.capability:
        for name in named(own):
            largest = max(_subtree_capability(child, name, ctx) for child in children)
            if own[name] < largest:
                return (
                    f"queue {view.name} capability[{name}]={format_one(name, own[name])} "
                    f"is smaller than its descendants' max capability={format_one(name, largest)}"
                )
    return _sum_error(view, children, f"queue {view.name}")


def _subtree_capability(view: QueueAdmissionFacts, name: str, ctx: AdmissionContext) -> float:
    value = volcano_amounts(view.capability).get(name, 0.0)
    if value > 0:
        return value
    below = [_subtree_capability(child, name, ctx) for child in ctx.children(view.name)]
    return max(below, default=0.0)
