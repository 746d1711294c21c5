"""A Job's literal env values are redacted whatever the Job's shape, and nothing raises."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.volcano.redaction import is_redacted, redact_env

pytestmark = pytest.mark.unit
SECRET = "hunter2-is-secret"  # longer than any text ANY makes: it is only where planted
ANY = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=20,
)


def either(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """The well-formed value, or anything at all in its place."""
    return st.one_of(good, good, ANY)


ENV = st.lists(either(st.fixed_dictionaries({"name": st.just("T"), "value": st.just(SECRET)})), max_size=3)
CONTAINER = st.fixed_dictionaries({"name": st.just("c"), "env": either(ENV)})
POD_SPEC = st.fixed_dictionaries(
    {},
    optional={
        kind: either(st.lists(either(CONTAINER), max_size=2)) for kind in ("containers", "initContainers")
    },
)
TASK = st.fixed_dictionaries({"template": either(st.fixed_dictionaries({"spec": either(POD_SPEC)}))})
JOB = st.fixed_dictionaries(
    {"spec": either(st.fixed_dictionaries({"tasks": either(st.lists(either(TASK), max_size=3))}))}
)


@settings(max_examples=300, deadline=None)
@given(job=JOB)
def test_no_literal_value_survives_and_a_redacted_job_says_so(job: dict[str, Any]) -> None:
    planted = SECRET in json.dumps(job)
    paths = redact_env(job)
    assert SECRET not in json.dumps(job)
    assert is_redacted(job) == planted == bool(paths)
    assert redact_env(job) == []  # idempotent: nothing left to redact
    assert all(path.startswith("spec.tasks[") and path.endswith(".env[*].value") for path in paths)
