"""The apiserver's verbs, between the HTTP routes and the store: create, update, patch, delete,
bind and evict, each through the same steps kube-apiserver takes.

Create: defaults → built-in admission (Priority, service IPs) → mutating webhooks → validation
→ validating webhooks → store. Update and patch: read → apply → the same admission steps →
store with an optimistic-concurrency check. Everything here raises `ApiError`; the HTTP layer
turns it into a Status. No HTTP types appear in this module.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from services.simulator.admission import disruption, managed_fields, pruning
from services.simulator.admission.patches import apply_patch
from services.simulator.admission.webhook_rules import AdmissionAttributes
from services.simulator.admission.webhooks import WebhookAdmission
from services.simulator.kubelets import pod_status
from services.simulator.store import deletion, errors
from services.simulator.store.api_resources import BY_PATH, PDBS, PODS, Kind
from services.simulator.store.errors import ApiError
from services.simulator.store.store import Store, timestamp
from services.simulator.store.validation import pod_update_causes

PRIORITY_CLASSES_PLURAL = "priorityclasses"


PATCH_ATTEMPTS = 5


def _names_version(patch: Any) -> bool:
    """Whether a merge, strategic or JSON patch sets metadata.resourceVersion (a precondition)."""
    if isinstance(patch, dict):
        return bool((patch.get("metadata") or {}).get("resourceVersion"))
    if isinstance(patch, list):
        return any(isinstance(op, dict) and op.get("path") == "/metadata/resourceVersion" for op in patch)
    return False


def success_status(code: int) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


class Operations:
    def __init__(self, store: Store, admission: WebhookAdmission, clock: Callable[[], datetime]) -> None:
        self._store, self._admission, self._clock = store, admission, clock
        self._service_ips = 0

    # -- create ----------------------------------------------------------------------------

    async def create(
        self,
        kind: Kind,
        namespace: str,
        body: Any,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
        operation: str = managed_fields.UPDATE,
        field_validation: str = "",
    ) -> dict[str, Any]:
        obj = _known_fields_only(kind, self._store.prepare_create(kind, body, namespace), field_validation)
        self._builtin_admission(kind, obj)
        attributes = self._attributes("CREATE", kind, "", obj, None, dry_run=dry_run)
        obj = self._as_object(kind, await self._admission.mutate(attributes), obj)
        self._store.validate(kind, obj)
        await self._admission.validate(self._attributes("CREATE", kind, "", obj, None, dry_run=dry_run))
        if field_manager:
            now = timestamp(self._clock())
            obj = managed_fields.record_create(obj, body, field_manager, operation, now)
        if dry_run:
            self._store.check_insert(kind, obj)
            return obj
        return self._store.insert(kind, obj)

    def _builtin_admission(self, kind: Kind, obj: dict[str, Any]) -> None:
        """The in-process admission plugins whose effects clients see: Priority, ClusterIP."""
        if kind is PODS:
            self._resolve_priority(obj)
        elif kind.kind == "Service":
            spec = obj["spec"]
            if not spec.get("clusterIP") and spec.get("type", "ClusterIP") != "ExternalName":
                self._service_ips += 1
                n = self._service_ips
                spec["clusterIP"] = f"10.96.{n // 250 % 250}.{n % 250 + 1}"
                spec["clusterIPs"] = [spec["clusterIP"]]

    def _resolve_priority(self, pod: dict[str, Any]) -> None:
        classes = BY_PATH[("scheduling.k8s.io", "v1", PRIORITY_CLASSES_PLURAL)]
        spec = pod["spec"]
        name = spec.get("priorityClassName")
        if name:
            found = self._store.find(classes, "", name)
            if found is None:
                raise ApiError(
                    403,
                    "Forbidden",
                    f'pods "{pod["metadata"]["name"]}" is forbidden: no PriorityClass with name '
                    f"{name} was found",
                )
        else:
            defaults = () if self._store.is_empty(classes) else self._store.iterate(classes)
            found = next((c for c in defaults if c.get("globalDefault")), None)
            if found is not None:
                spec["priorityClassName"] = found["metadata"]["name"]
        spec["priority"] = int(found.get("value", 0)) if found else 0
        if found and found.get("preemptionPolicy"):
            spec["preemptionPolicy"] = found["preemptionPolicy"]

    # -- update and patch ------------------------------------------------------------------

    async def update(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        body: Any,
        *,
        status_only: bool = False,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str = "",
    ) -> dict[str, Any]:
        new, old = self._store.prepare_update(kind, namespace, name, body, status_only=status_only)
        new = _known_fields_only(kind, new, field_validation)
        subresource = "status" if status_only else ""
        new = self._as_object(
            kind,
            await self._admission.mutate(
                self._attributes("UPDATE", kind, subresource, new, old, dry_run=dry_run)
            ),
            new,
        )
        self._store.validate(kind, new)
        if kind is PODS and not status_only and (causes := pod_update_causes(old, new)):
            raise errors.invalid("Pod", "", name, causes)
        await self._admission.validate(
            self._attributes("UPDATE", kind, subresource, new, old, dry_run=dry_run)
        )
        if field_manager and not status_only:
            new = managed_fields.record_update(old, new, field_manager, timestamp(self._clock()))
        if dry_run:
            return self._store.check_replace(kind, new, old)
        return self._store.replace(kind, new, old)

    async def patch(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        content_type: str,
        patch: Any,
        *,
        status_only: bool = False,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str = "",
    ) -> dict[str, Any]:
        # As kube-apiserver does: a patch that does not name a resourceVersion is applied again to
        # the newer object when another write landed while webhooks were being called.
        attempts = 1 if _names_version(patch) else PATCH_ATTEMPTS
        for attempt in range(attempts):
            old = self._store.get(kind, namespace, name)
            patched = apply_patch(content_type, old, patch)
            try:
                return await self.update(
                    kind,
                    namespace,
                    name,
                    patched,
                    status_only=status_only,
                    dry_run=dry_run,
                    field_manager=field_manager,
                    field_validation=field_validation,
                )
            except errors.ApiError as error:
                if error.code != 409 or attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")

    async def apply(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        config: Any,
        field_manager: str,
        *,
        force: bool = False,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Server-side apply (managed_fields.py): create the object or merge `config` into it."""
        if not isinstance(config, dict):
            raise errors.bad_request("the applied configuration must be an object")
        if (config.get("apiVersion"), config.get("kind")) != (kind.api_version, kind.kind):
            raise errors.bad_request(
                f"the applied configuration's apiVersion and kind ({config.get('apiVersion')}, "
                f"{config.get('kind')}) do not match the resource ({kind.api_version}, {kind.kind})"
            )
        given = config.get("metadata")
        metadata: dict[str, Any] = given if isinstance(given, dict) else {}
        if metadata.get("name") not in (None, name):
            raise errors.bad_request(
                f"the name of the object ({metadata['name']}) does not match the name on the URL ({name})"
            )
        config = {**config, "metadata": {**metadata, "name": name}}
        for attempt in range(PATCH_ATTEMPTS):
            current = self._store.find(kind, namespace, name)
            try:
                if current is None:
                    return await self.create(
                        kind,
                        namespace,
                        config,
                        dry_run=dry_run,
                        field_manager=field_manager,
                        operation=managed_fields.APPLY,
                    )
                now = timestamp(self._clock())
                merged = managed_fields.apply(current, config, field_manager, force=force, now=now)
                merged["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                return await self.update(kind, namespace, name, merged, dry_run=dry_run)
            except errors.ApiError as error:
                # Another write landed between the read and the store: apply again onto it.
                if error.reason not in ("Conflict", "AlreadyExists") or attempt == PATCH_ATTEMPTS - 1:
                    raise
                if error.causes and error.causes[0].reason == "FieldManagerConflict":
                    raise
        raise AssertionError("unreachable")

    # -- delete ----------------------------------------------------------------------------

    async def delete(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        options: dict[str, Any] | None = None,
        *,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        options = options or {}
        old = self._store.get(kind, namespace, name)
        preconditions = options.get("preconditions") or {}
        wanted = preconditions.get("resourceVersion")
        if wanted and wanted != old["metadata"]["resourceVersion"]:
            raise errors.conflict(
                kind.plural,
                kind.group,
                name,
                f"Precondition failed: ResourceVersion in precondition: {wanted}, "
                f"ResourceVersion in object meta: {old['metadata']['resourceVersion']}",
            )
        await self._admission.validate(self._attributes("DELETE", kind, "", None, old, dry_run=dry_run))
        propagation, grace = deletion.policy(options), deletion.requested_grace(options)
        if dry_run:
            _check_uid(old, preconditions.get("uid"), kind.plural)
            return old
        return self._store.delete(
            kind,
            namespace,
            name,
            propagation=propagation,
            uid=preconditions.get("uid"),
            grace_seconds=grace,
        )

    # -- pod subresources ------------------------------------------------------------------

    async def bind(self, namespace: str, name: str, binding: Any, *, dry_run: bool = False) -> dict[str, Any]:
        """pods/binding: set the node; 409 when the pod is already bound or being deleted."""
        if not isinstance(binding, dict):
            raise errors.bad_request("the request body must be a JSON object")
        target = (binding.get("target") or {}).get("name")
        binding_name = (binding.get("metadata") or {}).get("name") or name
        if not target:
            raise errors.invalid(
                "Binding",
                "",
                binding_name,
                [errors.FieldCause("FieldValueRequired", "Required value", "target.name")],
            )
        pod = self._store.get(PODS, namespace, binding_name)
        # As kube-apiserver does: a Binding that names a uid binds only the pod of that uid, so a
        # stale decision cannot bind a newer pod that reuses the name.
        _check_uid(pod, (binding.get("metadata") or {}).get("uid"), "pods/binding")
        if pod["spec"].get("nodeName"):
            raise errors.conflict(
                "pods/binding",
                "",
                binding_name,
                f'pod {binding_name} is already assigned to node "{pod["spec"]["nodeName"]}"',
            )
        if pod["metadata"].get("deletionTimestamp"):
            raise errors.conflict(
                "pods/binding",
                "",
                binding_name,
                f"pod {binding_name} is being deleted, cannot be assigned to a host",
            )
        await self._admission.validate(
            self._attributes("CREATE", PODS, "binding", binding, None, pod, dry_run=dry_run)
        )
        bound = pod_status.bound(pod, target, timestamp(self._clock()))
        annotations = (binding.get("metadata") or {}).get("annotations")
        if annotations:
            bound["metadata"] = {
                **bound["metadata"],
                "annotations": {**(bound["metadata"].get("annotations") or {}), **annotations},
            }
        if not dry_run:
            self._store.replace(PODS, bound, pod)
        return success_status(201)

    async def evict(
        self, namespace: str, name: str, eviction: Any, *, dry_run: bool = False
    ) -> dict[str, Any]:
        """pods/eviction: delete the pod (gracefully) if its disruption budget allows; 429 if not."""
        pod = self._store.get(PODS, namespace, name)
        body = eviction if isinstance(eviction, dict) else {}
        options = body.get("deleteOptions") or {}
        preconditions = options.get("preconditions") or {}
        _check_uid(pod, preconditions.get("uid"), "pods/eviction")
        await self._admission.validate(
            self._attributes("CREATE", PODS, "eviction", body, None, pod, dry_run=dry_run)
        )
        budgets = [b for b in self._store.iterate(PDBS, namespace) if disruption.covers(b, pod)]
        pdb = disruption.eviction_verdict(pod, budgets)
        if dry_run:
            return success_status(201)
        if pdb is not None:
            # The budget's disruption is spent before the pod goes, so a concurrent eviction
            # reads the lower count (the store is single-threaded: nothing interleaves here).
            self._store.update(PDBS, disruption.spent(pdb, name, self._clock()))
        self._store.delete(
            PODS,
            namespace,
            name,
            uid=preconditions.get("uid"),
            grace_seconds=deletion.requested_grace(options),
        )
        return success_status(201)

    # -- helpers ---------------------------------------------------------------------------

    @staticmethod
    def _attributes(
        operation: str,
        kind: Kind,
        subresource: str,
        obj: Any,
        old: Any,
        about: dict[str, Any] | None = None,
        *,
        dry_run: bool = False,
    ) -> AdmissionAttributes:
        subject = about or obj or old or {}
        metadata = subject.get("metadata") or {}
        return AdmissionAttributes(
            operation,
            kind,
            subresource,
            metadata.get("namespace", ""),
            metadata.get("name", ""),
            obj,
            old,
            dry_run,
        )

    @staticmethod
    def _as_object(kind: Kind, mutated: Any, original: dict[str, Any]) -> dict[str, Any]:
        if mutated is None:
            return original
        if not isinstance(mutated, dict) or not isinstance(mutated.get("metadata"), dict):
            raise errors.internal("a mutating webhook returned a patch that does not yield an object")
        mutated["apiVersion"], mutated["kind"] = kind.api_version, kind.kind
        return mutated


def _known_fields_only(kind: Kind, obj: dict[str, Any], field_validation: str) -> dict[str, Any]:
    """`obj` pruned of fields its kind does not declare; 400 under fieldValidation=Strict."""
    unknown = pruning.unknown_fields(kind, obj)
    if unknown and field_validation == "Strict":
        raise pruning.strict_error(unknown)
    return pruning.pruned(obj, unknown)


def _check_uid(obj: dict[str, Any], wanted: Any, resource: str) -> None:
    """409 Conflict when a uid precondition names another object than the one of that name."""
    held = obj["metadata"]["uid"]
    if wanted and wanted != held:
        raise errors.conflict(
            resource,
            "",
            obj["metadata"]["name"],
            f"Precondition failed: UID in precondition: {wanted}, UID in object meta: {held}",
        )
