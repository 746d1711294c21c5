"""The garbage collector's side of the store: owner references, cascades and foreground waits.

A mixin of `Store`, kept apart so the store's own module stays about storage. It indexes which
objects name which owner (by uid), deletes a removed owner's dependents unless another owner
remains (background), deletes them while the owner waits under the `foregroundDeletion`
finalizer until no dependent with `blockOwnerDeletion` is left (foreground), or strips the
reference (orphan), as https://kubernetes.io/docs/concepts/architecture/garbage-collection/
describes. An object stored naming only owners that no longer exist (a controller that created a
pod for a job deleted a moment before) is collected too, as the garbage collector does once it
finds every owner absent; references to absent owners beside a live one are dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from services.simulator.store import deletion

if TYPE_CHECKING:
    from services.simulator.store.api_resources import Kind


class OwnerGraph:
    _owners_of: dict[str, set[tuple[Kind, str, str, str]]]
    _by_uid: dict[str, tuple[Kind, str, str]]

    # Provided by Store.
    find: Callable[[Kind, str, str], dict[str, Any] | None]
    replace: Callable[[Kind, dict[str, Any], dict[str, Any]], dict[str, Any]]
    delete: Callable[..., dict[str, Any]]

    def _track_owners(self, kind: Kind, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        for obj, adding in ((old, False), (new, True)):
            if obj is None:
                continue
            metadata = obj["metadata"]
            key = (kind, metadata.get("namespace", ""), metadata["name"], metadata["uid"])
            for reference in metadata.get("ownerReferences") or []:
                owner_uid = reference.get("uid")
                if not owner_uid:
                    continue
                if adding:
                    self._owners_of.setdefault(owner_uid, set()).add(key)
                else:
                    self._owners_of.get(owner_uid, set()).discard(key)

    def exists_uid(self, uid: str) -> bool:
        return uid in self._by_uid

    def _dependents(self, owner_uid: str) -> list[tuple[Kind, dict[str, Any]]]:
        found = []
        for kind, namespace, name, uid in list(self._owners_of.get(owner_uid, set())):
            dependent = self.find(kind, namespace, name)
            if dependent is not None and dependent["metadata"]["uid"] == uid:
                found.append((kind, dependent))
        return found

    def _collect_dependents(self, owner_uid: str) -> None:
        """Delete what the removed owner owned, unless another owner still exists."""
        for kind, dependent in self._dependents(owner_uid):
            others = [
                r.get("uid")
                for r in dependent["metadata"].get("ownerReferences") or []
                if r.get("uid") != owner_uid
            ]
            if any(self.exists_uid(other) for other in others if other):
                continue
            self._delete_if_present(kind, dependent)
        self._owners_of.pop(owner_uid, None)

    def _collect_if_dangling(self, kind: Kind, obj: dict[str, Any]) -> None:
        """Collect `obj` when every owner it names is gone; drop the dangling references otherwise.

        Called once `obj` is stored: the owner may have been deleted between the writer's read and
        this write, and no later deletion would ever sweep it (the real garbage collector finds such
        dependents when it adds them to its graph)."""
        metadata = obj["metadata"]
        references = metadata.get("ownerReferences") or []
        dangling = [r for r in references if r.get("uid") and not self.exists_uid(r["uid"])]
        if not dangling or metadata.get("deletionTimestamp"):
            return
        if len(dangling) == len(references):
            self._delete_if_present(kind, obj)
            return
        kept = [r for r in references if r not in dangling]
        self.replace(kind, {**obj, "metadata": {**metadata, "ownerReferences": kept}}, obj)

    def _delete_dependents(self, owner_uid: str) -> None:
        """Foreground: the garbage collector deletes the dependents while the owner waits."""
        for kind, dependent in self._dependents(owner_uid):
            self._delete_if_present(kind, dependent)

    def _delete_if_present(self, kind: Kind, dependent: dict[str, Any]) -> None:
        # An earlier deletion in the same sweep may have taken it (a cascade) already.
        meta = dependent["metadata"]
        current = self.find(kind, meta.get("namespace", ""), meta["name"])
        if current is not None and current["metadata"]["uid"] == meta["uid"]:
            self.delete(kind, meta.get("namespace", ""), meta["name"], grace_seconds=None)

    def _finish_foreground(self, owner_uid: str | None) -> None:
        """Drop the owner's foregroundDeletion finalizer once no blocking dependent is left."""
        key = self._by_uid.get(owner_uid or "")
        if key is None:
            return
        owner = self.find(*key)
        if owner is None or deletion.FOREGROUND not in (owner["metadata"].get("finalizers") or []):
            return
        for _, dependent in self._dependents(owner["metadata"]["uid"]):
            for reference in dependent["metadata"].get("ownerReferences") or []:
                if reference.get("uid") == owner_uid and deletion.blocks(reference):
                    return
        finalizers = [f for f in owner["metadata"]["finalizers"] if f != deletion.FOREGROUND]
        self.replace(key[0], {**owner, "metadata": {**owner["metadata"], "finalizers": finalizers}}, owner)

    def _orphan_dependents(self, owner_uid: str) -> None:
        for kind, dependent in self._dependents(owner_uid):
            references = [
                r for r in dependent["metadata"].get("ownerReferences") or [] if r.get("uid") != owner_uid
            ]
            orphaned = {
                **dependent,
                "metadata": {**dependent["metadata"], "ownerReferences": references},
            }
            self.replace(kind, orphaned, dependent)
