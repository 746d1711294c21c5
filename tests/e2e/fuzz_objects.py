"""A seeded generator of malformed and extreme objects, for the fuzz tier (`test_fuzz.py`).

Each case starts from a valid Volcano Job, PodGroup, Queue, Command or Pod and breaks it in one
to three ways: a wrong JSON type at a field Phalanx reads, an integer past int32 or int64, a
quantity no resource vector holds, a hostile string (NUL, 300 characters, non-ASCII), a bad name,
label or annotation, nesting past the depth limit, an object past the size limits, or a
reference that cannot hold (a task depending on itself, a queue that does not exist). `expect`
lists what the refusal must name (a field path or the rule), any one of them; a case whose
mutations may leave it valid has `may_pass`. Pure: the same seed gives the same cases.
"""

from __future__ import annotations

import contextlib
import copy
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

RUN = {"simulator.phalanx/run-seconds": "1"}
TOO_LARGE = ("too large", "Too long")
DEEP_MARKER = "__deep__"
TYPE_SAMPLES: tuple[Any, ...] = ([], {}, "text", 7, 1.5, True, [1, [2]], {"a": {"b": 1}})
INT_EXTREMES = (2**31, -(2**31) - 1, 2**53, 10**30)
QUANTITY_EXTREMES = ("1e9999999", "1Ei", "9" * 100, "1.5.5", "NaN", "12Qi", "1e-99999")
STRING_EXTREMES = ("a\x00b", "x" * 300, "ünïcødé", "UPPER", " space ", "a/b/c")


@dataclass
class Case:
    kind: str
    obj: dict[str, Any]
    broken: list[str] = field(default_factory=list)  # what was done, for the failure message
    expect: list[str] = field(default_factory=list)  # the refusal names one of these
    may_pass: bool = False
    depth: int = 0  # nesting that `encode` puts where DEEP_MARKER stands

    @property
    def name(self) -> str:
        return str((self.obj.get("metadata") or {}).get("name") or "")


def _pod_template() -> dict[str, Any]:
    return {
        "metadata": {"annotations": dict(RUN)},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "10m", "memory": "8Mi"}},
                }
            ],
        },
    }


def base(kind: str, name: str) -> dict[str, Any]:
    if kind == "Job":
        return {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "minAvailable": 1,
                "queue": "default",
                "tasks": [{"name": "worker", "replicas": 1, "template": _pod_template()}],
            },
        }
    if kind == "PodGroup":
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": 1, "queue": "default", "minResources": {"cpu": "10m"}},
        }
    if kind == "Queue":
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"weight": 1, "capability": {"cpu": "100"}},
        }
    if kind == "Command":
        return {
            "apiVersion": "bus.volcano.sh/v1alpha1",
            "kind": "Command",
            "metadata": {"name": name, "namespace": "default"},
            "action": "AbortJob",
            "target": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "no-such-job"},
        }
    template = _pod_template()
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", **template["metadata"]},
        "spec": template["spec"],
    }


# Paths (as the API server prints them) of typed fields, per kind, and how to reach them.
INT_FIELDS = {
    "Job": ["spec.minAvailable", "spec.maxRetry", "spec.tasks[0].replicas", "spec.ttlSecondsAfterFinished"],
    "PodGroup": ["spec.minMember"],
    "Queue": ["spec.weight"],
}
STRING_FIELDS = {
    "Job": ["spec.queue", "spec.tasks[0].name", "spec.schedulerName"],
    "PodGroup": ["spec.queue", "spec.priorityClassName"],
    "Queue": ["spec.parent"],
    "Command": ["action", "target.name"],
    "Pod": ["spec.schedulerName"],
}
SHAPE_FIELDS = {
    "Job": ["spec", "spec.tasks", "spec.tasks[0]", "spec.tasks[0].template", "spec.tasks[0].template.spec"],
    "PodGroup": ["spec", "spec.minResources"],
    "Queue": ["spec", "spec.capability"],
    "Command": ["target"],
    "Pod": ["spec.containers"],
}
OBJECT_FIELDS = frozenset(
    {
        "spec",
        "spec.tasks[0]",
        "spec.tasks[0].template",
        "spec.tasks[0].template.spec",
        "spec.minResources",
        "spec.capability",
        "target",
    }
)
QUANTITY_FIELDS = {
    "Job": ["spec.tasks[0].template.spec.containers[0].resources.requests[cpu]"],
    "PodGroup": ["spec.minResources[cpu]"],
    "Queue": ["spec.capability[cpu]"],
    "Pod": ["spec.containers[0].resources.requests[cpu]"],
}


def _steps(path: str) -> list[str | int]:
    steps: list[str | int] = []
    for part in path.replace("]", "").split("."):
        name, *indexes = part.split("[")
        steps.append(name)
        steps += [int(i) if i.isdigit() else i for i in indexes]
    return steps


def _set(obj: Any, path: str, value: Any) -> None:
    *parents, last = _steps(path)
    for step in parents:
        obj = obj[step]
    obj[last] = value


def _type_swap(rng: random.Random, case: Case) -> None:
    path = rng.choice(
        SHAPE_FIELDS.get(case.kind, []) + INT_FIELDS.get(case.kind, []) + STRING_FIELDS.get(case.kind, [])
    )
    expected = _expected(case.kind, path)
    value = copy.deepcopy(rng.choice([v for v in TYPE_SAMPLES if not _same_type(v, expected)]))
    _set(case.obj, path, value)
    case.broken.append(f"{path} = {value!r}")
    case.expect.append(path)
    # An object where an object belongs may still make a valid one (a PodGroup spec of defaults).
    case.may_pass = case.may_pass or (isinstance(value, dict) and path in OBJECT_FIELDS)


def _expected(kind: str, path: str) -> type:
    if path in INT_FIELDS.get(kind, []):
        return int
    if path in STRING_FIELDS.get(kind, []):
        return str
    return dict if path in OBJECT_FIELDS else list


def _same_type(value: Any, expected: type) -> bool:
    """Would the schema take `value` where `expected` belongs? (A bool is no integer there.)"""
    return isinstance(value, expected) and not (isinstance(value, bool) and expected is int)


def _extreme(
    rng: random.Random, case: Case, fields: dict[str, list[str]], values: tuple[Any, ...]
) -> str | None:
    """Put one of `values` at one of the kind's `fields`; the path, or None if it has none."""
    if case.kind not in fields:
        return None
    path, value = rng.choice(fields[case.kind]), rng.choice(values)
    _set(case.obj, path, value)
    case.broken.append(f"{path} = {str(value)[:20]!r}")
    case.expect.append(path)
    return path


def _int_extreme(rng: random.Random, case: Case) -> None:
    if _extreme(rng, case, INT_FIELDS, INT_EXTREMES) is None:
        _string_extreme(rng, case)


def _quantity_extreme(rng: random.Random, case: Case) -> None:
    path = _extreme(rng, case, QUANTITY_FIELDS, QUANTITY_EXTREMES)
    if path is None:
        _string_extreme(rng, case)
    else:
        case.expect.append(path.replace("[cpu]", ".cpu"))


def _string_extreme(rng: random.Random, case: Case) -> None:
    _extreme(rng, case, STRING_FIELDS, STRING_EXTREMES)
    case.may_pass = True  # odd but legal in some fields (a schedulerName in upper case)


def _bad_metadata(rng: random.Random, case: Case) -> None:
    choice = rng.randrange(4)
    metadata = case.obj["metadata"]
    if choice == 0:
        metadata["name"] = rng.choice(["Bad_Name", "n" * 300, "a\x00b", "-lead"])
        case.expect.append("metadata.name")
    elif choice == 1:
        metadata["labels"] = {"app": rng.choice(["v" * 100, "a b", "a\x00"])}
        case.expect.append("metadata.labels")
    elif choice == 2:
        metadata["labels"] = {rng.choice(["bad key", "a/b/c", "x" * 70]): "v"}
        case.expect.append("metadata.labels")
    else:
        metadata["annotations"] = {"note": "n" * 300_000}
        case.expect += ["metadata.annotations", *TOO_LARGE]
    case.broken.append(f"metadata ({choice})")


def _deep(rng: random.Random, case: Case) -> None:
    # Marked here, spelled out by `encode`: no recursive encoder takes three thousand levels.
    case.depth = rng.choice([70, 300, 3000])
    case.obj.setdefault("spec", {})["affinity"] = DEEP_MARKER
    case.broken.append(f"nesting {case.depth}")
    case.expect.append("nesting deeper than")


def _oversized(rng: random.Random, case: Case) -> None:
    size = rng.choice([1_700_000, 3_300_000])
    case.obj["metadata"].setdefault("labels", {})
    case.obj.setdefault("spec", {})["blob"] = "b" * size
    case.broken.append(f"{size} bytes")
    case.expect += ["too large", "Request entity too large"]


def _broken_reference(rng: random.Random, case: Case) -> None:
    if case.kind != "Job":
        return _type_swap(rng, case)
    if rng.random() < 0.5:
        case.obj["spec"]["queue"] = "no-such-queue"
        case.expect += ["spec.queue", "no-such-queue"]
        case.broken.append("missing queue")
    else:
        task = case.obj["spec"]["tasks"][0]
        task["dependsOn"] = {"name": ["worker"]}
        case.expect += ["spec.tasks", "directed acyclic graph"]
        case.broken.append("dependency cycle")
    return None


MUTATIONS: tuple[Callable[[random.Random, Case], None], ...] = (
    _type_swap,
    _int_extreme,
    _quantity_extreme,
    _bad_metadata,
    _deep,
    _oversized,
    _broken_reference,
)


def encode(case: Case) -> bytes:
    """The request body: JSON, with the marked nesting spelled out."""
    text = json.dumps(case.obj)
    if case.depth:
        text = text.replace(f'"{DEEP_MARKER}"', '{"x": ' * case.depth + "{}" + "}" * case.depth)
    return text.encode()


def cases(seed: int, count: int) -> list[Case]:
    rng = random.Random(seed)
    made = []
    for number in range(count):
        kind = rng.choice(["Job", "Job", "PodGroup", "Queue", "Command", "Pod"])
        case = Case(kind, copy.deepcopy(base(kind, f"fuzz-{seed}-{number}")))
        for _ in range(rng.choice([1, 1, 2, 3])):
            # An earlier mutation may have taken away what this one would break: one fewer.
            with contextlib.suppress(TypeError, KeyError, IndexError, AttributeError):
                rng.choice(MUTATIONS)(rng, case)
        if not case.broken:
            _oversized(rng, case)
        made.append(case)
    return made


UPDATE_KINDS = ("Job", "PodGroup", "Queue")
UPDATE_MUTATIONS: tuple[Callable[[random.Random, Case], None], ...] = (
    _type_swap,
    _int_extreme,
    _quantity_extreme,
)


def update_cases(seed: int, count: int, names: dict[str, str]) -> list[Case]:
    """Cases for updates: the object named `names[kind]` with a broken spec, sent as a merge
    patch; only the breaks that no update can make valid (types, bounds, quantities)."""
    rng = random.Random(seed)
    made = []
    for _ in range(count):
        kind = rng.choice(UPDATE_KINDS)
        case = Case(kind, copy.deepcopy(base(kind, names[kind])))
        for _ in range(rng.choice([1, 1, 2])):
            with contextlib.suppress(TypeError, KeyError, IndexError, AttributeError):
                rng.choice(UPDATE_MUTATIONS)(rng, case)
        if case.broken and not case.may_pass and not any(b.startswith("metadata") for b in case.broken):
            made.append(case)
    return made
