"""One probe per expectation entry: a label for its result line and a check that observes.

The runner polls each probe's `check` until it holds (within) or for as long as it must hold
(stays). A check fetches what its entry names through `Kube` or the `Observer` and hands plain
dicts to a judge in `judges.py`; the judge decides. Failures to observe count as mismatches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from phalanx.scenario import judges
from phalanx.scenario.expectations import (
    Counted,
    EvictedExpectation,
    Expectation,
    JobExpectation,
    ObjectExpectation,
    PodExpectation,
    PodGroupExpectation,
    PodRef,
    QueueExpectation,
    split_ref,
)
from phalanx.scenario.kube import Kube
from phalanx.scenario.matchers import describe
from phalanx.scenario.objects import file_content, file_source, key_of
from phalanx.scenario.observer import Observer
from shared.volcano.keys import GROUP_NAME as GROUP_NAME_ANNOTATION

Obj = dict[str, Any]
Mismatches = list[str]


@dataclass(frozen=True)
class Probe:
    label: str
    check: Callable[[], Mismatches]


@dataclass
class History:
    """What the runner carries from step to step for the expectations that look back."""

    last_write: str | None = None  # the apply/patch/delete step just before, if any
    refusal: str | None = None  # what the API said when it refused that step
    previous_uids: dict[tuple[str, str], str] = field(default_factory=dict)


_IDENTITY = frozenset({"namespace", "name", "kind", "selector", "job", "pod", "count"})


def _label(section: str, index: int, ident: str, entry: BaseModel) -> str:
    shown = entry.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True)
    parts = [section + f"[{index}]", ident]
    for key, value in shown.items():
        if key in _IDENTITY:
            continue
        if key in ("fields", "env", "files") and isinstance(value, Mapping):
            parts += [f"{k}={describe(v)}" for k, v in value.items()]
        elif key == "condition" and isinstance(value, Mapping):
            parts += [f"condition.{k}={describe(v)}" for k, v in value.items()]
        else:
            parts.append(f"{key}={describe(value, any_of=key in ('phase', 'state'))}")
    if "count" in shown:
        parts.insert(2, f"count={shown['count']}")
    return " ".join(parts)


def _ident(entry: Counted | JobExpectation | PodGroupExpectation, default_ns: str = "") -> str:
    namespace = getattr(entry, "namespace", None) or default_ns
    name = getattr(entry, "name", None)
    if isinstance(entry, Counted) and entry.selector is not None:
        return f"{namespace}/{{{entry.selector}}}" if namespace else f"{{{entry.selector}}}"
    return f"{namespace}/{name}" if namespace else str(name)


class ProbeBuilder:
    def __init__(self, kube: Kube, observer: Observer, history: History) -> None:
        self._kube, self._observer, self._history = kube, observer, history

    def build(self, expect: Expectation) -> list[Probe]:
        return [
            *self._object_probes(expect),
            *self._history_probes(expect),
            *self._placement_probes(expect),
        ]

    def _object_probes(self, expect: Expectation) -> list[Probe]:
        probes: list[Probe] = []
        for i, job in enumerate(expect.jobs):
            probes.append(Probe(_label("jobs", i, _ident(job), job), self._job(job)))
        for i, group in enumerate(expect.podgroups):
            how = f"{group.namespace}/" + (
                group.name or (f"job:{group.job}" if group.job else f"pod:{group.pod}")
            )
            probes.append(Probe(_label("podgroups", i, how, group), self._podgroup(group)))
        for i, pod in enumerate(expect.pods):
            probes.append(Probe(_label("pods", i, _ident(pod, "default"), pod), self._pods(pod)))
        for i, queue in enumerate(expect.queues):
            probes.append(Probe(_label("queues", i, queue.name, queue), self._queue(queue)))
        for i, obj in enumerate(expect.objects):
            label = _label("objects", i, f"{obj.kind} {_ident(obj)}", obj)
            probes.append(Probe(label, self._objects(obj)))
        return probes

    def _history_probes(self, expect: Expectation) -> list[Probe]:
        probes: list[Probe] = []
        for i, (first, second) in enumerate(expect.started_before):
            label = f"startedBefore[{i}] {first} before {second}"
            probes.append(Probe(label, self._started_before(first, second)))
        for i, evicted in enumerate(expect.evicted):
            label = _label("evicted", i, evicted.namespace, evicted)
            for key in ("job", "name", "selector"):
                if getattr(evicted, key) is not None:
                    label += f" {key}={getattr(evicted, key)}"
            probes.append(Probe(label, self._evicted(evicted)))
        for section, refs, recreated in (
            ("recreated", expect.recreated, True),
            ("notRecreated", expect.not_recreated, False),
        ):
            for i, ref in enumerate(refs):
                label = f"{section}[{i}] {ref.namespace}/{ref.name}"
                probes.append(Probe(label, self._recreated(ref, recreated)))
        if expect.denied is not None:
            denied, history = expect.denied, self._history
            phrases = " | ".join(repr(p) for p in denied.contains_any)
            probes.append(
                Probe(
                    f"denied containsAny {phrases}",
                    lambda: judges.match_denied(denied, history.refusal, history.last_write),
                )
            )
        return probes

    def _placement_probes(self, expect: Expectation) -> list[Probe]:
        probes: list[Probe] = []
        for section, groups, same in (
            ("sameNode", expect.same_node, True),
            ("distinctNodes", expect.distinct_nodes, False),
        ):
            for i, pods in enumerate(groups):
                probes.append(Probe(f"{section}[{i}] {' '.join(pods)}", self._nodes(pods, same)))
        return probes

    # -- checks ------------------------------------------------------------------------------

    def _queue(self, entry: QueueExpectation) -> Callable[[], Mismatches]:
        return lambda: judges.match_queue(entry, self._kube.get("Queue", None, entry.name))

    def _evicted(self, entry: EvictedExpectation) -> Callable[[], Mismatches]:
        return lambda: judges.match_evicted(entry, self._observer.evicted_pods())

    def _job(self, entry: JobExpectation) -> Callable[[], Mismatches]:
        return lambda: judges.match_job(entry, self._kube.get("Job", entry.namespace, entry.name))

    def _podgroup_name(self, entry: PodGroupExpectation) -> str | None:
        if entry.name is not None:
            return entry.name
        if entry.pod is not None:
            pod = self._kube.get("Pod", entry.namespace, entry.pod)
            annotations = ((pod or {}).get("metadata") or {}).get("annotations") or {}
            return annotations.get(GROUP_NAME_ANNOTATION)
        assert entry.job is not None
        known = self._observer.podgroup_of_job(entry.namespace, entry.job)
        if known is not None:
            return known
        for group in self._kube.list_objects("PodGroup", entry.namespace):
            owners = (group.get("metadata") or {}).get("ownerReferences") or []
            if any(o.get("kind") == "Job" and o.get("name") == entry.job for o in owners):
                name = key_of(group)[1]
                self._observer.remember_podgroup(entry.namespace, entry.job, name)
                return name
        return None

    def _podgroup(self, entry: PodGroupExpectation) -> Callable[[], Mismatches]:
        def check() -> Mismatches:
            name = self._podgroup_name(entry)
            if name is None:
                return judges.match_podgroup(entry, None)
            return judges.match_podgroup(entry, self._kube.get("PodGroup", entry.namespace, name))

        return check

    def _files(self, entry: PodExpectation, pod: Mapping[str, Any]) -> dict[str, str | None]:
        contents: dict[str, str | None] = {}
        for path in entry.files:
            source = file_source(pod, path)
            holder = None if source is None else self._kube.get(source.kind, source.namespace, source.name)
            contents[path] = None if source is None else file_content(source, holder)
        return contents

    def _pods(self, entry: PodExpectation) -> Callable[[], Mismatches]:
        namespace = entry.namespace or "default"

        def check() -> Mismatches:
            if entry.name is not None:
                pod = self._kube.get("Pod", namespace, entry.name)
                files = self._files(entry, pod) if pod is not None and entry.files else None
                return judges.match_named_pod(entry, pod, files)
            pods = self._kube.list_objects("Pod", namespace, entry.selector)
            return judges.match_counted(
                entry, pods, lambda p: judges.match_pod(entry, p, self._files(entry, p)), "pods"
            )

        return check

    def _objects(self, entry: ObjectExpectation) -> Callable[[], Mismatches]:
        def check() -> Mismatches:
            namespace = (entry.namespace or "default") if self._kube.namespaced(entry.kind) else None
            if entry.name is not None:
                return judges.match_object(entry, self._kube.get(entry.kind, namespace, entry.name))
            found = self._kube.list_objects(entry.kind, namespace, entry.selector)
            return judges.match_counted(
                entry,
                found,
                lambda o: judges.match_fields(entry.fields, o),
                "pods" if entry.kind == "Pod" else "objects",
            )

        return check

    def _started_before(self, first: str, second: str) -> Callable[[], Mismatches]:
        return lambda: judges.match_started_before(
            first,
            second,
            self._observer.job_started_at(*split_ref(first)),
            self._observer.job_started_at(*split_ref(second)),
        )

    def _recreated(self, ref: PodRef, recreated: bool) -> Callable[[], Mismatches]:
        previous = self._history.previous_uids.get((ref.namespace, ref.name))
        return lambda: judges.match_recreated(
            previous, self._kube.get("Pod", ref.namespace, ref.name), recreated=recreated
        )

    def _nodes(self, refs: list[str], same: bool) -> Callable[[], Mismatches]:
        def check() -> Mismatches:
            pods = {ref: self._kube.get("Pod", *split_ref(ref)) for ref in refs}
            return judges.match_nodes(pods, same=same)

        return check
