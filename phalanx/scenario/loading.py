"""Reading a scenario file: YAML text to a typed `Scenario`, or errors that name the place.

The first thing `run_files` does with each path. A mistake is reported as
`steps[2].expect.jobs[0]: unknown key 'phse'`, so the author can find it without knowing the
models; `parse_scenario` is pure (text in, model or `ScenarioError` out) for the tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from phalanx.scenario.model import Scenario


class ScenarioError(ValueError):
    """A scenario file that cannot be read; `problems` holds one line per mistake."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: " + "; ".join(problems))


def format_location(location: tuple[int | str, ...]) -> str:
    """('steps', 2, 'expect', 'jobs', 0) → `steps[2].expect.jobs[0]`."""
    text = ""
    for part in location:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


def _problem(error: ErrorDetails) -> str:
    location = tuple(error["loc"])
    if error["type"] == "extra_forbidden":
        where, key = format_location(location[:-1]), location[-1]
        return f"{where or '(top level)'}: unknown key {str(key)!r}"
    if error["type"] == "missing":
        where, key = format_location(location[:-1]), location[-1]
        return f"{where or '(top level)'}: missing key {str(key)!r}"
    message = error["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return f"{format_location(location) or '(top level)'}: {message}"


def parse_scenario(text: str, source: str = "<scenario>") -> Scenario:
    try:
        document: Any = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ScenarioError(source, [f"not valid YAML: {error}"]) from None
    if not isinstance(document, dict):
        raise ScenarioError(source, ["a scenario is a YAML mapping with name, cluster and steps"])
    try:
        return Scenario.model_validate(document)
    except ValidationError as error:
        raise ScenarioError(source, [_problem(e) for e in error.errors()]) from None


def load_scenario(path: Path) -> Scenario:
    try:
        text = path.read_text()
    except OSError as error:
        raise ScenarioError(str(path), [f"cannot read: {error.strerror}"]) from None
    return parse_scenario(text, str(path))
