"""What the apiserver does to an object itself: defaults before admission, checks after it.

`apply_defaults` fills the fields a real apiserver fills on create (a Pod's phase, scheduler
name and restart policy; a Namespace's name label; the defaults Volcano's CRD schemas declare);
`validate` returns the field causes of a 422 (malformed metadata and schema violations, see
`object_rules`; missing or malformed names, a Pod without containers). Pure: plain dicts in,
plain data out; anything needing other objects (priority classes, service IPs) is the store's.
"""

from __future__ import annotations

from typing import Any

from services.simulator.store.api_resources import Kind
from services.simulator.store.errors import FieldCause
from services.simulator.store.object_rules import object_causes
from shared.kube.names import dns1123_label_errors, dns1123_subdomain_errors
from shared.volcano.schema import quoted

# Kinds whose names become DNS labels (a Service's name is a host name; a Namespace's too).
_LABEL_NAMED = frozenset({"Namespace", "Service"})
# Events are named `<object>.<hex>` by clients and the apiserver does not hold them to DNS rules.
_FREELY_NAMED = frozenset({"Event"})


def apply_defaults(kind: Kind, obj: dict[str, Any]) -> None:
    """Fill create-time defaults in place (the object is the request's own copy)."""
    spec = obj.get("spec")
    if kind.kind == "Pod":
        spec = obj.setdefault("spec", {})
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        for container in spec.get("containers") or []:
            container.setdefault("imagePullPolicy", "IfNotPresent")
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("resources", {})
        status = obj.setdefault("status", {})
        status.setdefault("phase", "Pending")
        status.setdefault("qosClass", _qos_class(spec.get("containers") or []))
    elif kind.kind == "Namespace":
        labels = obj["metadata"].setdefault("labels", {})
        labels["kubernetes.io/metadata.name"] = obj["metadata"].get("name", "")
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj["status"] = {"phase": "Active"}
    elif kind.kind == "Service":
        spec = obj.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        for port in spec.get("ports") or []:
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
    elif kind.kind == "Job" and isinstance(spec, dict):
        spec.setdefault("queue", "default")
        spec.setdefault("maxRetry", 3)
    elif kind.kind == "PodGroup" and isinstance(spec, dict):
        spec.setdefault("queue", "default")
    elif kind.kind == "Event":
        obj.setdefault("type", "Normal")
        obj.setdefault("count", 1)


def _qos_class(containers: list[dict[str, Any]]) -> str:
    requests_any, guaranteed = False, bool(containers)
    for container in containers:
        resources = container.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        requests_any = requests_any or bool(requests) or bool(limits)
        if not limits or any(requests.get(r, limits.get(r)) != limits.get(r) for r in ("cpu", "memory")):
            guaranteed = False
        if not ({"cpu", "memory"} <= set(limits)):
            guaranteed = False
    if guaranteed:
        return "Guaranteed"
    return "Burstable" if requests_any else "BestEffort"


def validate(kind: Kind, obj: dict[str, Any]) -> list[FieldCause]:
    """The causes of a 422 for this object; empty when it is acceptable."""
    if causes := object_causes(kind.kind, obj):
        return causes  # shapes the checks below would misread
    causes = _validate_name(kind, obj.get("metadata") or {})
    if kind.kind == "Pod":
        causes.extend(_validate_pod(obj.get("spec") or {}))
    return causes


def _validate_name(kind: Kind, metadata: dict[str, Any]) -> list[FieldCause]:
    name = metadata.get("name")
    if not name:
        return [
            FieldCause(
                "FieldValueRequired",
                "Required value: name or generateName is required",
                "metadata.name",
            )
        ]
    if kind.kind in _FREELY_NAMED:
        return []
    if not isinstance(name, str):
        return [_invalid_name(name, "must be a string")]
    check = dns1123_label_errors if kind.kind in _LABEL_NAMED else dns1123_subdomain_errors
    return [_invalid_name(name, why) for why in check(name)]


def _invalid_name(name: object, why: str) -> FieldCause:
    return FieldCause("FieldValueInvalid", f"Invalid value: {quoted(name)}: {why}", "metadata.name")


def _validate_pod(spec: dict[str, Any]) -> list[FieldCause]:
    containers = spec.get("containers")
    if not containers:
        return [FieldCause("FieldValueRequired", "Required value", "spec.containers")]
    causes = []
    for index, container in enumerate(containers):
        if not container.get("name"):
            causes.append(
                FieldCause("FieldValueRequired", "Required value", f"spec.containers[{index}].name")
            )
        if not container.get("image"):
            causes.append(
                FieldCause("FieldValueRequired", "Required value", f"spec.containers[{index}].image")
            )
    return causes


POD_UPDATE_FORBIDDEN = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions "
    "to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it "
    "was previously negative)"
)


def pod_update_causes(old: dict[str, Any], new: dict[str, Any]) -> list[FieldCause]:
    """A Pod's spec is immutable but for the fields ValidatePodUpdate lets change (above) and the
    removal of scheduling gates; anything else is a 422 on `spec`."""
    before, after = old.get("spec") or {}, dict(new.get("spec") or {})
    for containers in ("containers", "initContainers"):
        olds, news = before.get(containers) or [], after.get(containers) or []
        if news and len(olds) == len(news) and all(isinstance(c, dict) for c in news):
            after[containers] = [
                {**n, "image": o.get("image")} if isinstance(o, dict) else n
                for o, n in zip(olds, news, strict=True)
            ]
    if after.get("activeDeadlineSeconds") is not None:
        after["activeDeadlineSeconds"] = before.get("activeDeadlineSeconds")
    old_tolerations, new_tolerations = before.get("tolerations") or [], after.get("tolerations") or []
    if all(t in new_tolerations for t in old_tolerations):
        after["tolerations"] = before.get("tolerations")
    gates = after.get("schedulingGates") or []
    if all(g in (before.get("schedulingGates") or []) for g in gates):
        after["schedulingGates"] = before.get("schedulingGates")
    if (before.get("terminationGracePeriodSeconds") or 0) < 0 and after.get(
        "terminationGracePeriodSeconds"
    ) == 1:
        after["terminationGracePeriodSeconds"] = before.get("terminationGracePeriodSeconds")
    if _without_nulls(after) == _without_nulls(before):
        return []
    return [FieldCause("FieldValueForbidden", POD_UPDATE_FORBIDDEN, "spec")]


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value
