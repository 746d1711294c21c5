"""The Volcano models load every manifest we know of and dump it back unchanged.

Round-trips the seeds' apply documents (when the seeds folder is present), our own example
manifests under tests/unit/admission/data/valid, and checks the defaults, quantity spelling,
unknown-field preservation and the kind dispatcher that other services rely on.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from shared.domain.quantity import Quantity
from shared.volcano import (
    Action,
    Command,
    Event,
    Job,
    JobPhase,
    PodGroup,
    Queue,
    QueueState,
    UnknownKindError,
    is_volcano_manifest,
    load_manifest,
    quantities,
)

pytestmark = pytest.mark.unit

DATA = Path(__file__).parents[1] / "admission" / "data" / "valid"
SEEDS = Path(os.environ.get("PHALANX_SEEDS", "/work/shared/scenarios/seeds"))


def _seed_documents() -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(SEEDS.glob("*.yaml")) if SEEDS.is_dir() else []:
        scenario = yaml.safe_load(path.read_text())
        for step in scenario.get("steps", []):
            for doc in yaml.safe_load_all(step.get("apply", "")):
                if isinstance(doc, dict) and is_volcano_manifest(doc):
                    found.append((f"{path.stem}:{doc['kind']}/{doc['metadata']['name']}", doc))
    return found


def _data_documents() -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{path.stem}:{doc['metadata']['name']}", doc)
        for path in sorted(DATA.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]


SEED_DOCS = _seed_documents()
DATA_DOCS = _data_documents()


@pytest.mark.skipif(not SEED_DOCS, reason=f"no seeds at {SEEDS}")
@pytest.mark.parametrize(("doc"), [d for _, d in SEED_DOCS], ids=[i for i, _ in SEED_DOCS])
def test_seed_manifest_round_trips_unchanged(doc: dict[str, Any]) -> None:
    assert load_manifest(doc).to_manifest() == doc


@pytest.mark.parametrize(("doc"), [d for _, d in DATA_DOCS], ids=[i for i, _ in DATA_DOCS])
def test_example_manifest_round_trips_unchanged(doc: dict[str, Any]) -> None:
    loaded = load_manifest(doc)
    assert loaded.to_manifest() == doc
    assert type(loaded).model_validate(loaded.to_manifest()).to_manifest() == doc


def test_every_kind_is_in_the_examples() -> None:
    kinds = {type(load_manifest(doc)) for _, doc in DATA_DOCS}
    assert kinds == {Job, PodGroup, Queue, Command}


@pytest.mark.parametrize(
    ("doc", "model"),
    [
        ({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}, Job),
        ({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup"}, PodGroup),
        ({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue"}, Queue),
        ({"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command"}, Command),
    ],
    ids=["job", "podgroup", "queue", "command"],
)
def test_load_manifest_dispatches_by_api_version_and_kind(doc: dict[str, Any], model: type[Any]) -> None:
    assert type(load_manifest(doc)) is model


@pytest.mark.parametrize(
    "doc",
    [
        {"apiVersion": "v1", "kind": "Pod"},
        {"apiVersion": "scheduling.volcano.sh/v1alpha1", "kind": "Queue"},
        {"apiVersion": "batch/v1", "kind": "Job"},
        {},
    ],
    ids=["pod", "old-queue-version", "kubernetes-job", "empty"],
)
def test_load_manifest_refuses_other_kinds(doc: dict[str, Any]) -> None:
    assert not is_volcano_manifest(doc)
    with pytest.raises(UnknownKindError):
        load_manifest(doc)


def test_crd_defaults_are_visible_but_not_dumped() -> None:
    job = Job.model_validate({"metadata": {"name": "j"}, "spec": {"tasks": [{"replicas": 1}]}})
    assert (job.spec.queue, job.spec.max_retry, job.spec.min_available) == ("default", 3, 0)
    assert job.spec.tasks[0].min_available is None
    assert "queue" not in job.to_manifest()["spec"]
    queue = Queue.model_validate({"metadata": {"name": "q"}})
    assert queue.spec.weight == 1
    assert queue.to_manifest() == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q"},
    }


def test_quantities_keep_their_spelling_and_type() -> None:
    doc = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q"},
        "spec": {"capability": {"cpu": 4, "memory": "6Gi", "example.org/fpga": "1000m"}},
    }
    queue = Queue.model_validate(doc)
    assert queue.to_manifest() == doc
    assert queue.spec.capability == {"cpu": 4, "memory": "6Gi", "example.org/fpga": "1000m"}
    assert quantities(queue.spec.capability)["example.org/fpga"] == Quantity("1")
    assert dict(queue.spec.capability_vector()) == {
        "cpu": 4000,
        "memory": 6 * 2**30 * 1000,
        "example.org/fpga": 1000,
    }


@pytest.mark.parametrize("amount", ["four", "1.5.1", "", True], ids=str)
def test_malformed_quantities_are_refused(amount: object) -> None:
    with pytest.raises(ValidationError):
        PodGroup.model_validate({"spec": {"minResources": {"cpu": amount}}})


def test_unknown_fields_are_kept_at_every_level() -> None:
    doc = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "managedFields": [{"manager": "kubectl"}]},
        "spec": {
            "futureField": {"a": 1},
            "tasks": [{"replicas": 1, "newTaskField": True, "policies": [{"x": 1}]}],
        },
        "status": {"someCounter": 3},
        "extraTopLevel": "kept",
    }
    assert load_manifest(doc).to_manifest() == doc


def test_enums_load_as_enums_and_dump_as_strings() -> None:
    job = Job.model_validate(
        {
            "spec": {"policies": [{"event": "PodEvicted", "action": "RestartJob"}]},
            "status": {"state": {"phase": "Running"}},
        }
    )
    assert job.spec.policies is not None
    assert job.spec.policies[0].event is Event.POD_EVICTED
    assert job.spec.policies[0].action is Action.RESTART_JOB
    assert job.status.state.phase is JobPhase.RUNNING
    assert job.to_manifest()["spec"]["policies"] == [{"event": "PodEvicted", "action": "RestartJob"}]


def test_unknown_enum_value_is_refused() -> None:
    with pytest.raises(ValidationError):
        Queue.model_validate({"status": {"state": "Half-open"}})


def test_changes_made_in_code_are_dumped_with_api_version_and_kind() -> None:
    queue = Queue.model_validate({"metadata": {"name": "q"}})
    queue.status.state = QueueState.CLOSED
    assert queue.to_manifest()["status"] == {"state": "Closed"}
    built = Job(metadata={"name": "built"})
    assert built.to_manifest() == {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "built"},
    }


def test_snake_case_names_are_accepted_in_code() -> None:
    job = Job.model_validate({"spec": {"min_available": 2, "scheduler_name": "volcano"}})
    assert job.to_manifest()["spec"] == {"minAvailable": 2, "schedulerName": "volcano"}
