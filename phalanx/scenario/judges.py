"""Deciding each expectation from plain observed data: the pure heart of the runner.

Every judge takes an expectation entry and what the probe fetched (dicts, uids, timestamps) and
returns the mismatches, each a phrase such as `expected phase Running, observed Pending`; an
empty list means the condition holds. The probes call these on every poll, the unit tests call
them on hand-written dicts. No I/O, no clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from phalanx.scenario.expectations import (
    Checked,
    ConditionExpectation,
    Counted,
    DeniedExpectation,
    EvictedExpectation,
    JobExpectation,
    PodExpectation,
    PodGroupExpectation,
    QueueExpectation,
)
from phalanx.scenario.matchers import MISSING, describe, lookup, matches, show
from phalanx.scenario.objects import decoded, key_of, labels_of, phase_of, selector_matches
from shared.volcano.keys import JOB_NAME as JOB_NAME_LABEL
from shared.volcano.keys import TASK_SPEC as TASK_LABEL

Obj = Mapping[str, Any]
Mismatches = list[str]


def _expect(what: str, expected: Any, observed: Any, *, any_of: bool = False) -> Mismatches:
    if matches(expected, observed, any_of=any_of):
        return []
    return [f"expected {what} {describe(expected, any_of=any_of)}, observed {show(observed)}"]


def match_fields(fields: Mapping[str, Any], obj: Obj) -> Mismatches:
    plain = decoded(obj)
    found: Mismatches = []
    for path, expected in fields.items():
        found += _expect(path, expected, lookup(plain, path))
    return found


def _existence(entry: Checked, obj: Obj | None) -> Mismatches | None:
    """Mismatches decided by existence alone, or None when the other fields must be checked."""
    if entry.exists is False:
        return [] if obj is None else ["expected it not to exist, observed it exists"]
    if obj is None:
        return ["expected it to exist, observed none"]
    return None


# -- jobs, podgroups, queues ---------------------------------------------------------------------


def _count(status: Obj, key: str) -> Any:
    # Volcano omits zero counters from a Job's status (omitempty): absent reads as 0.
    value = status.get(key, 0)
    return 0 if value is None else value


def job_summary(job: Obj | None) -> str:
    if job is None:
        return "no such job"
    status = job.get("status") or {}
    counts = " ".join(f"{key}={_count(status, key)}" for key in ("running", "pending", "succeeded", "failed"))
    return f"{counts} retryCount={_count(status, 'retryCount')}"


def match_job(entry: JobExpectation, job: Obj | None) -> Mismatches:
    decided = _existence(entry, job)
    if decided is not None:
        return decided
    assert job is not None
    status = job.get("status") or {}
    found: Mismatches = []
    if entry.phase is not None:
        # No phase yet means no controller has looked at the job: not the same as Pending.
        phase = lookup(status, "state.phase")
        found += _expect("phase", entry.phase, phase, any_of=True)
    for attribute, key in (
        ("running", "running"),
        ("pending", "pending"),
        ("succeeded", "succeeded"),
        ("failed", "failed"),
        ("retry_count", "retryCount"),
    ):
        expected = getattr(entry, attribute)
        if expected is not None:
            found += _expect(key, expected, _count(status, key))
    found += match_fields(entry.fields, job)
    if found:  # the counters say at a glance how far the job got
        found[-1] += f" ({job_summary(job)})"
    return found


def _condition_holds(wanted: ConditionExpectation | None, message: Any, condition: Obj) -> bool:
    if wanted is not None:
        for key in ("type", "status", "reason", "message"):
            expected = getattr(wanted, key)
            if expected is not None and not matches(expected, condition.get(key, MISSING)):
                return False
    return message is None or matches(message, condition.get("message", MISSING))


def _show_conditions(conditions: Iterable[Obj]) -> str:
    shown = [
        f"{c.get('type')}/{c.get('status')}/{c.get('reason') or '-'}"
        + (f": {c.get('message')}" if c.get("message") else "")
        for c in conditions
    ]
    return "[" + "; ".join(shown) + "]" if shown else "no conditions"


def match_podgroup(entry: PodGroupExpectation, podgroup: Obj | None) -> Mismatches:
    decided = _existence(entry, podgroup)
    if decided is not None:
        return decided
    assert podgroup is not None
    status = podgroup.get("status") or {}
    found: Mismatches = []
    if entry.phase is not None:
        phase = status.get("phase", MISSING)
        found += _expect("phase", entry.phase, phase, any_of=True)
    if entry.condition is not None or entry.message is not None:
        conditions = [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]
        if not any(_condition_holds(entry.condition, entry.message, c) for c in conditions):
            wanted = [
                f"{key}={describe(getattr(entry.condition, key))}"
                for key in ("type", "status", "reason", "message")
                if entry.condition is not None and getattr(entry.condition, key) is not None
            ]
            if entry.message is not None:
                wanted.append(f"message {describe(entry.message)}")
            found.append(f"expected a condition {' '.join(wanted)}, observed {_show_conditions(conditions)}")
    return found + match_fields(entry.fields, podgroup)


def match_queue(entry: QueueExpectation, queue: Obj | None) -> Mismatches:
    decided = _existence(entry, queue)
    if decided is not None:
        return decided
    assert queue is not None
    found: Mismatches = []
    if entry.state is not None:
        state = (queue.get("status") or {}).get("state", MISSING)
        found += _expect("state", entry.state, state, any_of=True)
    return found + match_fields(entry.fields, queue)


# -- pods and other objects ------------------------------------------------------------------


def _env_values(pod: Obj, variable: str) -> list[Any]:
    spec = pod.get("spec") or {}
    return [
        item.get("value", "")
        for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
        for item in container.get("env") or []
        if item.get("name") == variable
    ]


def _file_matches(expected: Any, content: str | None) -> bool:
    if isinstance(expected, str):
        # Block scalars end in a newline and files often do not: neither counts.
        return content is not None and content.rstrip("\n") == expected.rstrip("\n")
    return matches(expected, MISSING if content is None else content)


def match_pod(entry: PodExpectation, pod: Obj, files: Mapping[str, str | None] | None = None) -> Mismatches:
    """One pod against phase, node, env, files and fields (existence is the caller's)."""
    found: Mismatches = []
    if entry.phase is not None:
        found += _expect("phase", entry.phase, phase_of(pod), any_of=True)
    if entry.node is not None:
        found += _expect("node", entry.node, (pod.get("spec") or {}).get("nodeName", MISSING))
    for variable, expected in entry.env.items():
        values = _env_values(pod, variable)
        if not any(matches(expected, v) for v in values or [MISSING]):
            shown = " | ".join(show(v) for v in values) if values else show(MISSING)
            found.append(f"expected env {variable} {describe(expected)}, observed {shown}")
    for path, expected in entry.files.items():
        content = (files or {}).get(path)
        if not _file_matches(expected, content):
            shown = "no such file in the pod's volume mounts" if content is None else show(content)
            found.append(f"expected file {path} {describe(expected)}, observed {shown}")
    return found + match_fields(entry.fields, pod)


def _phase_counts(pods: Iterable[Obj]) -> str:
    counts = Counter(phase_of(pod) for pod in pods)
    return " ".join(f"{phase}={n}" for phase, n in sorted(counts.items())) or "none"


def match_named_pod(
    entry: PodExpectation, pod: Obj | None, files: Mapping[str, str | None] | None = None
) -> Mismatches:
    decided = _existence(entry, pod)
    if decided is not None:
        return decided
    assert pod is not None
    return match_pod(entry, pod, files)


def match_counted(
    entry: Counted,
    candidates: Sequence[Obj],
    mismatches_of: Callable[[Obj], Mismatches],
    noun: str = "objects",
) -> Mismatches:
    """`count` objects of the selector satisfy every other field (`mismatches_of(obj)` empty)."""
    assert entry.selector is not None
    assert entry.count is not None
    selected = [c for c in candidates if selector_matches(entry.selector, labels_of(c))]
    matching = [c for c in selected if not mismatches_of(c)]
    if len(matching) == entry.count:
        return []
    detail = f"{len(selected)} selected"
    if noun == "pods":
        detail += f" ({_phase_counts(selected)})"
    elif selected and len(matching) < entry.count:
        detail += f"; first differs: {mismatches_of(selected[0])[0]}"
    return [f"expected {entry.count} {noun} matching, observed {len(matching)} of {detail}"]


def match_object(entry: Checked, obj: Obj | None) -> Mismatches:
    decided = _existence(entry, obj)
    if decided is not None:
        return decided
    assert obj is not None
    return match_fields(entry.fields, obj)


# -- history: starts, evictions, replacement, placement, refusals --------------------------------


def match_started_before(
    first: str, second: str, first_at: float | None, second_at: float | None
) -> Mismatches:
    if first_at is None:
        return [f"expected {first} to reach Running, observed it never did"]
    if second_at is not None and second_at <= first_at:
        return [
            f"expected {first} to reach Running before {second}, observed {second} at "
            f"{second_at:.1f}s and {first} at {first_at:.1f}s"
        ]
    return []


def match_evicted(entry: EvictedExpectation, evicted: Iterable[Obj]) -> Mismatches:
    """Pods (their last known state) evicted since the scenario began, filtered by the entry."""
    chosen = []
    for pod in evicted:
        namespace, name = key_of(pod)
        labels = labels_of(pod)
        if namespace != entry.namespace:
            continue
        if entry.job is not None and labels.get(JOB_NAME_LABEL) != entry.job:
            continue
        if entry.task is not None and labels.get(TASK_LABEL) != entry.task:
            continue
        if entry.name is not None and name != entry.name:
            continue
        if entry.selector is not None and not selector_matches(entry.selector, labels):
            continue
        chosen.append(name)
    shown = ", ".join(sorted(chosen)) or "none"
    if entry.count is None:
        return [] if chosen else ["expected at least one evicted pod, observed none"]
    if len(chosen) != entry.count:
        return [f"expected {entry.count} evicted, observed {len(chosen)} ({shown})"]
    return []


def match_recreated(previous_uid: str | None, pod: Obj | None, *, recreated: bool) -> Mismatches:
    """`recreated`: the pod now is a new object; else it is still the one seen before."""
    if pod is None:
        return ["expected the pod to exist, observed none"]
    uid = str((pod.get("metadata") or {}).get("uid") or "")
    if previous_uid is None:
        return ["no uid recorded for it at the previous expect (it did not exist yet)"]
    if recreated and uid == previous_uid:
        return [f"expected a new object, observed the same uid {uid}"]
    if not recreated and uid != previous_uid:
        return [f"expected the same object (uid {previous_uid}), observed new uid {uid}"]
    return []


def match_nodes(pods: Mapping[str, Obj | None], *, same: bool) -> Mismatches:
    """Every pod (by 'ns/name') bound; all on one node (`same`) or each on its own."""
    missing = [ref for ref, pod in pods.items() if pod is None]
    if missing:
        return [f"expected pods to exist, observed none for {', '.join(missing)}"]
    nodes = {ref: (pod or {}).get("spec", {}).get("nodeName") for ref, pod in pods.items()}
    unbound = [ref for ref, node in nodes.items() if not node]
    if unbound:
        return [f"expected pods bound to nodes, observed {', '.join(unbound)} unbound"]
    shown = ", ".join(f"{ref}@{node}" for ref, node in nodes.items())
    distinct = len(set(nodes.values()))
    if same and distinct != 1:
        return [f"expected one node, observed {shown}"]
    if not same and distinct != len(nodes):
        return [f"expected distinct nodes, observed {shown}"]
    return []


def match_denied(entry: DeniedExpectation, refusal: str | None, step: str | None) -> Mismatches:
    if step is None:
        return ["expected a refused apply, patch or delete step before, observed none"]
    if refusal is None:
        return [f"expected {step} to be refused, observed it was accepted"]
    if any(phrase in refusal for phrase in entry.contains_any):
        return []
    phrases = " | ".join(repr(p) for p in entry.contains_any)
    return [f"expected a refusal containing one of {phrases}, observed {refusal!r}"]
