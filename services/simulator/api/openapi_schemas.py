"""The schemas the simulator's OpenAPI documents publish, one per served kind, for `kubectl explain`.

Built-in kinds are read from the official Python client's models (their fields, types and
descriptions are generated from Kubernetes' own OpenAPI document); Volcano's kinds from the
structural schemas in `shared.volcano.schema`, with Volcano's descriptions of the fields users
explain most. Each kind's schema carries `x-kubernetes-group-version-kind`, which is how kubectl
finds it. `components(kinds, ref_prefix)` serves both OpenAPI v3 (`#/components/schemas/`) and
v2 (`#/definitions/`).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import kubernetes.client as models

from services.simulator.store.api_resources import Kind
from shared.volcano import schema as volcano

_PRIMITIVES: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer", "format": "int64"},
    "float": {"type": "number", "format": "double"},
    "bool": {"type": "boolean"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "object": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
}
_LIST = re.compile(r"^List\[(.+)\]$|^list\[(.+)\]$")
_DICT = re.compile(r"^Dict\[str, (.+)\]$|^dict\(str, (.+)\)$")
# The model of each built-in kind, where its name is not V1<Kind>.
_MODEL_NAMES = {"Event": "CoreV1Event", "ResourceClaim": "ResourceV1ResourceClaim"}

# Volcano's own descriptions (batch.volcano.sh/v1alpha1 and scheduling.volcano.sh/v1beta1 types).
VOLCANO_DESCRIPTIONS: dict[str, str] = {
    "Job": "Job defines the volcano job.",
    "Job.spec": "Specification of the desired behavior of the volcano job, including the minAvailable",
    "Job.status": "Current status of the volcano Job",
    "Job.spec.schedulerName": "SchedulerName is the default value of `tasks.template.spec.schedulerName`.",
    "Job.spec.minAvailable": "The minimal available pods to run for this Job. Defaults to the summary of "
    "tasks' replicas",
    "Job.spec.minSuccess": "The minimal success pods to run for this Job",
    "Job.spec.tasks": "Tasks specifies the task specification of Job",
    "Job.spec.policies": "Specifies the default lifecycle of tasks",
    "Job.spec.plugins": "Enabled task plugins when creating job.",
    "Job.spec.queue": 'Specifies the queue that will be used in the scheduler, "default" queue is used '
    "this leaves empty.",
    "Job.spec.maxRetry": "Specifies the maximum number of retries before marking this Job failed. "
    "Defaults to 3.",
    "Job.spec.ttlSecondsAfterFinished": "ttlSecondsAfterFinished limits the lifetime of a Job that has "
    "finished execution (either Completed or Failed).",
    "Job.spec.priorityClassName": "If specified, indicates the job's priority.",
    "Job.spec.tasks.name": "Name specifies the name of tasks",
    "Job.spec.tasks.replicas": "Replicas specifies the replicas of this TaskSpec in Job",
    "Job.spec.tasks.minAvailable": "The minimal available pods to run for this Task. Defaults to the "
    "task replicas",
    "Job.spec.tasks.template": "Specifies the pod that will be created for this TaskSpec when executing "
    "a Job",
    "Job.spec.tasks.policies": "Specifies the lifecycle of task",
    "Job.spec.tasks.maxRetry": "Specifies the maximum number of retries before marking this Task failed.",
    "Job.spec.tasks.dependsOn": "Specifies the tasks that this Task depends on.",
    "PodGroup": "PodGroup is a collection of Pod; used for batch workload.",
    "PodGroup.spec.minMember": "MinMember defines the minimal number of members/tasks to run the pod "
    "group; if there's not enough resources to start all tasks, the scheduler will not start anyone.",
    "PodGroup.spec.queue": "Queue defines the queue to allocate resource for PodGroup; if queue does not "
    "exist, the PodGroup will not be scheduled.",
    "PodGroup.spec.minResources": "MinResources defines the minimal resource of members/tasks to run the "
    "pod group; if there's not enough resources to start all tasks, the scheduler will not start anyone.",
    "Queue": "Queue is a queue of PodGroup.",
    "Queue.spec.weight": "The weight of the queue: its share of the cluster among its siblings.",
    "Queue.spec.capability": "The upper bound of the resources the queue may use.",
    "Queue.spec.reclaimable": "Reclaimable indicate whether the queue can be reclaimed by other queue",
    "Command": "Command defines command structure.",
}


def schema_name(kind: Kind) -> str:
    """The component name of `kind`'s schema, as kube-apiserver names its definitions."""
    group = kind.group or "core"
    if kind.group.endswith("volcano.sh"):
        return f"sh.volcano.{kind.group.split('.')[0]}.{kind.version}.{kind.kind}"
    return f"io.k8s.api.{group.split('.')[0]}.{kind.version}.{kind.kind}"


def components(kinds: list[Kind], ref_prefix: str) -> dict[str, Any]:
    """Every schema the kinds need (theirs and what they refer to), with refs under `ref_prefix`."""
    found: dict[str, Any] = {}
    for kind in kinds:
        model = getattr(models, _MODEL_NAMES.get(kind.kind, f"V1{kind.kind}"), None)
        if kind.group.endswith("volcano.sh") or model is None:
            found[schema_name(kind)] = _volcano(kind, ref_prefix)
            _model_schemas(models.V1ObjectMeta, ref_prefix, found)
            _model_schemas(models.V1PodTemplateSpec, ref_prefix, found)
            continue
        _model_schemas(model, ref_prefix, found)
        found[schema_name(kind)] = {
            **found.pop(model_schema_name(model.__name__)),
            "x-kubernetes-group-version-kind": [_gvk(kind)],
        }
    return found


def _gvk(kind: Kind) -> dict[str, str]:
    return {"group": kind.group, "version": kind.version, "kind": kind.kind}


_MODEL_NAME = re.compile(r"^([A-Z][a-z]+)?(V\d+(?:alpha\d+|beta\d+)?)([A-Z].*)$")


@cache
def model_schema_name(model_name: str) -> str:
    """`V1PodSpec` → `io.k8s.api.v1.PodSpec`: kubectl shows a field's type as the last part."""
    parts = _MODEL_NAME.match(model_name)
    if parts is None:
        return model_name
    group, version, name = parts.groups()
    return ".".join(p for p in ("io.k8s.api", (group or "").lower(), version.lower(), name) if p)


def _model_schemas(model: Any, ref_prefix: str, found: dict[str, Any]) -> None:
    """`model`'s schema and those of every model it refers to, added to `found` once each."""
    name = model_schema_name(model.__name__)
    if name in found:
        return
    properties: dict[str, Any] = {}
    found[name] = {
        "type": "object",
        "description": _model_description(model),
        "properties": properties,
    }
    required = []
    for attribute, type_name in model.openapi_types.items():
        field = model.model_fields.get(attribute)
        json_name = model.attribute_map[attribute]
        prop = _type(type_name, ref_prefix, found)
        if field is not None and field.description:
            prop = {**prop, "description": field.description}
        properties[json_name] = prop
        if field is not None and field.is_required():
            required.append(json_name)
    if required:
        found[name]["required"] = required


def _type(type_name: str, ref_prefix: str, found: dict[str, Any]) -> dict[str, Any]:
    if type_name in _PRIMITIVES:
        return dict(_PRIMITIVES[type_name])
    if listed := _LIST.match(type_name):
        return {"type": "array", "items": _type(listed.group(1) or listed.group(2), ref_prefix, found)}
    if mapped := _DICT.match(type_name):
        value = _type(mapped.group(1) or mapped.group(2), ref_prefix, found)
        return {"type": "object", "additionalProperties": value}
    model = getattr(models, type_name, None)
    if model is None:
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    _model_schemas(model, ref_prefix, found)
    # v3 puts a description beside a reference only through allOf, as kube-apiserver does.
    return {"allOf": [{"$ref": f"{ref_prefix}{model_schema_name(model.__name__)}"}]}


@cache
def _model_description(model: Any) -> str:
    doc = (model.__doc__ or "").strip()
    return doc.split("\n\n")[0].replace("\n", " ").strip() if doc else ""


def _volcano(kind: Kind, ref_prefix: str) -> dict[str, Any]:
    if kind.kind == "Command":
        body = _shape(volcano.COMMAND, kind.kind, ref_prefix)
        properties = dict(body["properties"])
    else:
        spec = volcano.SPECS.get(kind.kind, ("object", {}))
        properties = {"spec": _shape(spec, f"{kind.kind}.spec", ref_prefix)}
        properties["spec"].setdefault("description", VOLCANO_DESCRIPTIONS.get(f"{kind.kind}.spec", ""))
        properties["status"] = {
            "type": "object",
            "description": VOLCANO_DESCRIPTIONS.get(f"{kind.kind}.status", "Current status"),
            "x-kubernetes-preserve-unknown-fields": True,
        }
    return {
        "type": "object",
        "description": VOLCANO_DESCRIPTIONS.get(kind.kind, ""),
        "properties": {
            "apiVersion": {"type": "string", "description": _field_description(models.V1Pod, "api_version")},
            "kind": {"type": "string", "description": _field_description(models.V1Pod, "kind")},
            "metadata": {"allOf": [{"$ref": f"{ref_prefix}{model_schema_name('V1ObjectMeta')}"}]},
            **properties,
        },
        "x-kubernetes-group-version-kind": [_gvk(kind)],
    }


def _field_description(model: Any, attribute: str) -> str:
    field = model.model_fields.get(attribute)
    return str(field.description or "") if field is not None else ""


def _shape(shape: volcano.Shape, path: str, ref_prefix: str) -> dict[str, Any]:
    children: Any
    type_name, children = shape if isinstance(shape, tuple) else (shape, None)
    described: dict[str, Any]
    if type_name == "object" and isinstance(children, dict):
        properties = {key: _shape(child, f"{path}.{key}", ref_prefix) for key, child in children.items()}
        described = {"type": "object", "properties": properties}
        if path.endswith(".template"):
            # A task's template is a whole PodTemplateSpec, as in Volcano's CRD.
            described = {"allOf": [{"$ref": f"{ref_prefix}{model_schema_name('V1PodTemplateSpec')}"}]}
    elif type_name == "object":
        described = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    elif type_name == "map":
        described = {"type": "object", "additionalProperties": _shape(children, f"{path}[]", ref_prefix)}
    elif type_name == "array":
        described = {"type": "array", "items": _shape(children, f"{path}[]", ref_prefix)}
    elif type_name == "quantity":
        described = {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}
    elif type_name in ("integer", "int64"):
        described = {"type": "integer", "format": "int32" if type_name == "integer" else "int64"}
    elif type_name == "any":
        described = {"x-kubernetes-preserve-unknown-fields": True}
    else:
        described = {"type": type_name}
    # An array's or map's items share its path with "[]"; only the field itself is described.
    if not path.endswith("[]") and (description := VOLCANO_DESCRIPTIONS.get(path.replace("[]", ""))):
        described["description"] = description
    return described
