"""The `expect` step as typed data: what a scenario says must hold, and for how long.

Parsed with the rest of the scenario (`model.py`); the probes turn each entry into an
observation and `judges.py` decides it. Values that may be matchers (`{contains}`, `{present}`,
`{absent}`, `{includes}`) are checked for their shape here and compared in `matchers.py`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from phalanx.scenario.matchers import check_matcher, parse_path
from phalanx.scenario.objects import check_selector

DEFAULT_WITHIN = 30.0
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: Any) -> float:
    """`30s`, `1m30s`, `500ms` or a plain number of seconds, as seconds."""
    if isinstance(value, bool):
        raise ValueError(f"a duration such as '30s' is needed, got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            text += "s"
        parts = _DURATION.findall(text)
        if "".join(n + u for n, u in parts) != text:
            raise ValueError(f"a duration such as '30s', '1m30s' or '500ms' is needed, got {value!r}")
        seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    else:
        raise ValueError(f"a duration such as '30s' is needed, got {value!r}")
    if seconds < 0:
        raise ValueError(f"a duration cannot be negative, got {value!r}")
    return seconds


Seconds = Annotated[float, BeforeValidator(parse_duration)]
Matchable = Annotated[Any, AfterValidator(check_matcher)]


def _selector(value: str) -> str:
    check_selector(value)
    return value


Selector = Annotated[str, AfterValidator(_selector)]


def _check_ref(value: Any) -> str:
    if not isinstance(value, str) or value.count("/") > 1 or not value.strip("/"):
        raise ValueError(f"a pod or job is named 'namespace/name' or 'name', got {value!r}")
    return value


Ref = Annotated[str, BeforeValidator(_check_ref)]


def split_ref(ref: str) -> tuple[str, str]:
    """`team-a/j1` → (team-a, j1); a bare name is in namespace default."""
    namespace, _, name = ref.rpartition("/")
    return namespace or "default", name


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Checked(Strict):
    """What every entry of jobs, podgroups, pods, queues and objects takes."""

    fields: dict[str, Matchable] = Field(default_factory=dict)
    exists: bool | None = None

    @model_validator(mode="after")
    def _paths_parse(self) -> Checked:
        for path in self.fields:
            parse_path(path)
        return self


class Counted(Checked):
    """An entry naming one object, or a selector with the count of matching objects."""

    namespace: str | None = None
    name: str | None = None
    selector: Selector | None = None
    count: int | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _one_or_counted(self) -> Counted:
        if (self.name is None) == (self.selector is None):
            raise ValueError("give either name, or selector and count")
        if self.selector is not None and self.count is None:
            raise ValueError("a selector needs a count")
        if self.name is not None and self.count is not None:
            raise ValueError("count goes with selector, not name")
        if self.selector is not None and self.exists is not None:
            raise ValueError("exists goes with name; with a selector use count: 0")
        return self


class JobExpectation(Checked):
    namespace: str = "default"
    name: str
    phase: Matchable = None
    running: Matchable = None
    pending: Matchable = None
    succeeded: Matchable = None
    failed: Matchable = None
    retry_count: Matchable = Field(None, alias="retryCount")


class ConditionExpectation(Strict):
    type: Matchable = None
    status: Matchable = None
    reason: Matchable = None
    message: Matchable = None


class PodGroupExpectation(Checked):
    namespace: str = "default"
    name: str | None = None
    job: str | None = None
    pod: str | None = None
    phase: Matchable = None
    condition: ConditionExpectation | None = None
    message: Matchable = None

    @model_validator(mode="after")
    def _one_way_to_name(self) -> PodGroupExpectation:
        if sum(x is not None for x in (self.name, self.job, self.pod)) != 1:
            raise ValueError("name the PodGroup by exactly one of name, job, pod")
        return self


class PodExpectation(Counted):
    phase: Matchable = None
    node: Matchable = None
    env: dict[str, Matchable] = Field(default_factory=dict)
    files: dict[str, Matchable] = Field(default_factory=dict)


class QueueExpectation(Checked):
    name: str
    state: Matchable = None


class ObjectExpectation(Counted):
    kind: str


class EvictedExpectation(Strict):
    namespace: str = "default"
    job: str | None = None
    task: str | None = None
    name: str | None = None
    selector: Selector | None = None
    count: int | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _task_needs_job(self) -> EvictedExpectation:
        if self.task is not None and self.job is None:
            raise ValueError("task needs job")
        return self


class PodRef(Strict):
    namespace: str = "default"
    name: str


class DeniedExpectation(Strict):
    contains_any: list[str] = Field(alias="containsAny", min_length=1)


class Expectation(Strict):
    within: Seconds | None = None
    stays: Seconds | None = None
    jobs: list[JobExpectation] = Field(default_factory=list)
    podgroups: list[PodGroupExpectation] = Field(default_factory=list)
    pods: list[PodExpectation] = Field(default_factory=list)
    queues: list[QueueExpectation] = Field(default_factory=list)
    started_before: list[tuple[Ref, Ref]] = Field(default_factory=list, alias="startedBefore")
    evicted: list[EvictedExpectation] = Field(default_factory=list)
    recreated: list[PodRef] = Field(default_factory=list)
    not_recreated: list[PodRef] = Field(default_factory=list, alias="notRecreated")
    same_node: list[Annotated[list[Ref], Field(min_length=2)]] = Field(default_factory=list, alias="sameNode")
    distinct_nodes: list[Annotated[list[Ref], Field(min_length=2)]] = Field(
        default_factory=list, alias="distinctNodes"
    )
    objects: list[ObjectExpectation] = Field(default_factory=list)
    denied: DeniedExpectation | None = None

    @model_validator(mode="after")
    def _timing(self) -> Expectation:
        if self.within is not None and self.stays is not None:
            raise ValueError("give within or stays, not both")
        return self

    @property
    def holds_throughout(self) -> bool:
        return self.stays is not None

    @property
    def seconds(self) -> float:
        if self.stays is not None:
            return self.stays
        return DEFAULT_WITHIN if self.within is None else self.within
