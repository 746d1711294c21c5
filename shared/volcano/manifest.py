"""Turns a Kubernetes JSON document into the right Volcano model by apiVersion and kind.

The entry point for anything that receives manifests of several kinds: the scenario runner's
`apply` steps, the watcher, the simulator's CRD store, admission's typed views.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .command import Command
from .job import Job
from .podgroup import PodGroup
from .queue import Queue

VolcanoObject = Job | PodGroup | Queue | Command

MODELS: dict[tuple[str, str], type[Job] | type[PodGroup] | type[Queue] | type[Command]] = {
    ("batch.volcano.sh/v1alpha1", "Job"): Job,
    ("scheduling.volcano.sh/v1beta1", "PodGroup"): PodGroup,
    ("scheduling.volcano.sh/v1beta1", "Queue"): Queue,
    ("bus.volcano.sh/v1alpha1", "Command"): Command,
}


class UnknownKindError(ValueError):
    """The document is not one of the Volcano kinds this package models."""


def is_volcano_manifest(doc: Mapping[str, Any]) -> bool:
    return (doc.get("apiVersion"), doc.get("kind")) in MODELS


def load_manifest(doc: Mapping[str, Any]) -> VolcanoObject:
    """The typed model of `doc`; raises UnknownKindError for other kinds, pydantic's
    ValidationError for a malformed Volcano object."""
    key = (doc.get("apiVersion"), doc.get("kind"))
    model = MODELS.get(key)  # type: ignore[arg-type]
    if model is None:
        raise UnknownKindError(f"not a Volcano object: apiVersion={key[0]!r} kind={key[1]!r}")
    return model.model_validate(doc)
