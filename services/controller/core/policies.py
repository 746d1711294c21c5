"""Lifecycle policies: which action a job event asks for, and after how long.

The first step of every transition (lifecycle.transition): the event that reached the job is
matched against the task's policies, then the job's, exactly as Volcano's `applyPolicies` does;
the answer is an action and a delay (a delay makes the transition schedule a timer instead).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from shared.volcano.enums import Action, Event

# Events the controller raises for itself; they never match a user's policy.
INTERNAL_EVENTS = frozenset({Event.OUT_OF_SYNC, Event.COMMAND_ISSUED, Event.POD_RUNNING})
# Actions that do not come from a user's intent; they never cancel delayed actions.
INTERNAL_ACTIONS = frozenset(
    {Action.SYNC_JOB, Action.ENQUEUE_JOB, Action.SYNC_QUEUE, Action.OPEN_QUEUE, Action.CLOSE_QUEUE}
)

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_go_duration(text: str) -> timedelta:
    """A Go `time.Duration` string ("90s", "1m30s", "1h", "500ms") as a timedelta."""
    text = text.strip()
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    if body == "0":
        return timedelta(0)
    position, seconds = 0, 0.0
    for match in _DURATION_PART.finditer(body):
        if match.start() != position:
            break
        seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(body) or not body:
        raise ValueError(f'time: invalid duration "{text}"')
    return timedelta(seconds=sign * seconds)


def format_go_duration(delay: timedelta) -> str:
    """Go's `Duration.String()` for whole seconds and above, e.g. "1m30s", "1h0m0s"."""
    total = delay.total_seconds()
    if total == 0:
        return "0s"
    if abs(total) < 1:
        return f"{round(total * 1000)}ms"
    hours, rest = divmod(int(total), 3600)
    minutes, seconds = divmod(rest, 60)
    fraction = total - int(total)
    seconds_text = f"{seconds + fraction:g}s"
    if hours:
        return f"{hours}h{minutes}m{seconds_text}"
    if minutes:
        return f"{minutes}m{seconds_text}"
    return seconds_text


@dataclass(frozen=True)
class Policy:
    """One `LifecyclePolicy`: events (or an exit code) → action, optionally after a timeout."""

    action: str
    events: frozenset[str] = frozenset()
    exit_code: int | None = None
    timeout: timedelta | None = None

    @classmethod
    def from_manifest(cls, raw: Mapping[str, Any]) -> Policy:
        events = set(raw.get("events") or ())
        if raw.get("event"):
            events.add(raw["event"])
        timeout = raw.get("timeout")
        try:
            delay = parse_go_duration(timeout) if isinstance(timeout, str) else None
        except ValueError:
            delay = None  # admission refuses these; a stored one must not stop the controller
        return cls(
            action=str(raw.get("action", "")),
            events=frozenset(str(e) for e in events),
            exit_code=None if raw.get("exitCode") is None else int(raw["exitCode"]),
            timeout=delay,
        )


def policies_from_manifest(raw: Iterable[Mapping[str, Any]] | None) -> tuple[Policy, ...]:
    return tuple(Policy.from_manifest(p) for p in raw or ())


@dataclass(frozen=True)
class ResolvedAction:
    """What to do about an event: an action, now (delay 0) or after `delay`."""

    action: str
    delay: timedelta = timedelta(0)


def _match(policy: Policy, event: str, exit_code: int | None) -> bool:
    named = bool(policy.events and event) and (event in policy.events or Event.ANY in policy.events)
    # A PodPending policy without a timeout would fire on every pod creation.
    if named and (event != Event.POD_PENDING or policy.timeout is not None):
        return True
    return policy.exit_code is not None and policy.exit_code == (exit_code or 0)


def _first_match(policies: Iterable[Policy], event: str, exit_code: int | None) -> ResolvedAction | None:
    for policy in policies:
        if _match(policy, event, exit_code):
            return ResolvedAction(policy.action, policy.timeout or timedelta(0))
    return None


def resolve_policy(
    *,
    event: str,
    exit_code: int | None,
    task_policies: Iterable[Policy],
    job_policies: Iterable[Policy],
    commanded_action: str | None = None,
    stale: bool = False,
) -> ResolvedAction:
    """Volcano's `applyPolicies`: command, internal event, staleness, task policies, job policies.

    `stale` is true when the request belongs to another incarnation of the job (UID differs) or to
    an older version of it (pod created before the last full restart): it only triggers a sync.
    `exit_code` of None is compared as 0, as Volcano's request carries 0 when no code was seen.
    """
    if commanded_action:
        return ResolvedAction(commanded_action)
    if event in INTERNAL_EVENTS or stale:
        return ResolvedAction(Action.SYNC_JOB)
    return (
        _first_match(task_policies, event, exit_code)
        or _first_match(job_policies, event, exit_code)
        or ResolvedAction(Action.SYNC_JOB)
    )


_SCOPES: dict[str, str] = {
    Action.RESTART_TASK: "task",
    Action.RESTART_POD: "pod",
    Action.RESTART_PARTITION: "partition",
}


def action_scope(action: str) -> str:
    """Which delayed actions an executed action supersedes: job (default), task, pod, partition."""
    return _SCOPES.get(action, "job")
