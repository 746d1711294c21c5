"""Pure: a Job's literal environment values, taken out of what leaves the API (issue #14, item 6).

A Volcano Job's pod templates may carry `env: [{name, value}]` with secrets in `value`. The
watcher redacts those values before it publishes the Job on `cluster.job.*`, and the controller
redacts every Job it holds in its cache (whether it came from the bus, a list or a write
response), so that no copy outside the API server keeps them and a cached Job compares equal with
its published echo. Only literal values go: `valueFrom` and `envFrom` are references (a Secret's
name and key), kept because they say nothing secret.

A redacted value is replaced by `REDACTED`, so that whoever needs the real template (the
controller, when it creates pods) knows to read the Job from the API: `is_redacted` tells.
Nothing here raises: every shape is tolerated, and what is not a list of dicts is left alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

REDACTED: Final = "(redacted by phalanx: read the Job from the API)"
CONTAINER_KINDS: Final = ("containers", "initContainers", "ephemeralContainers")


def redact_env(job: dict[str, Any]) -> list[str]:
    """Replace every literal env value in `job`'s task templates, in place; the paths redacted."""
    paths: list[str] = []
    for index, containers, env in _env_entries(job):
        if "value" in env and env["value"] != REDACTED:
            env["value"] = REDACTED
            path = f"spec.tasks[{index}].template.spec.{containers}[*].env[*].value"
            if path not in paths:
                paths.append(path)
    return paths


def is_redacted(job: dict[str, Any]) -> bool:
    """True when some env value in `job`'s templates was redacted: its pods need the API's copy."""
    return any(env.get("value") == REDACTED for _, _, env in _env_entries(job))


def _env_entries(job: dict[str, Any]) -> Iterator[tuple[int, str, dict[str, Any]]]:
    spec = job.get("spec")
    tasks = spec.get("tasks") if isinstance(spec, dict) else None
    for index, task in enumerate(_dicts(tasks)):
        template = task.get("template")
        pod_spec = template.get("spec") if isinstance(template, dict) else None
        if not isinstance(pod_spec, dict):
            continue
        for containers in CONTAINER_KINDS:
            for container in _dicts(pod_spec.get(containers)):
                for env in _dicts(container.get("env")):
                    yield index, containers, env


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
