"""Lifecycle policy checks shared by a Job's own policies and each task's policies.

Called by `jobs.validate_job_create`. Mirrors Volcano's policy validation: it stops at the first
bad policy, then adds the wildcard check, and words the result as hashicorp's multierror does,
followed by the lists of valid events and actions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shared.volcano import POLICY_ACTIONS, POLICY_EVENTS, Event

from .errors import FieldError, Reason, go_invalid, go_list

VALID_EVENTS: tuple[str, ...] = POLICY_EVENTS
VALID_ACTIONS: tuple[str, ...] = POLICY_ACTIONS
VALID_LISTS = f" valid events are {go_list(VALID_EVENTS)}, valid actions are {go_list(VALID_ACTIONS)};"


def validate_policies(policies: Sequence[Any] | None, field: str, volcano_path: str) -> list[FieldError]:
    """Errors of one policy list; `field` is the real path (`spec.tasks[0].policies`),
    `volcano_path` the one Volcano prints (`spec.tasks.policies`)."""
    found: list[tuple[str, str, Reason]] = []  # (field, message, reason)
    seen_events: set[str] = set()
    seen_codes: set[object] = set()
    for index, policy in enumerate(policies or []):
        here = f"{field}[{index}]"
        policy = policy if isinstance(policy, dict) else {}
        events = _events_of(policy)
        exit_code = policy.get("exitCode")
        if events and exit_code is not None:
            found.append((here, "must not specify event and exitCode simultaneously", "FieldValueForbidden"))
            break
        if not events and exit_code is None:
            found.append((here, "either event and exitCode should be specified", "FieldValueRequired"))
            break
        if events:
            problem = _event_problem(policy, events, seen_events, here, volcano_path)
            if problem:
                found.append(problem)
                break
        else:
            if exit_code == 0:
                found.append((f"{here}.exitCode", "0 is not a valid error code", "FieldValueInvalid"))
                break
            if exit_code in seen_codes:
                found.append((f"{here}.exitCode", f"duplicate exitCode {exit_code}", "FieldValueDuplicate"))
                break
            seen_codes.add(exit_code)
    if Event.ANY in seen_events and len(seen_events) > 1:
        found.append((field, "if there's * here, no other policy should be here", "FieldValueInvalid"))
    if not found:
        return []
    count = "1 error occurred" if len(found) == 1 else f"{len(found)} errors occurred"
    text = f"{count}:\n" + "".join(f"\t* {message}\n" for _, message, _ in found) + "\n"
    text += VALID_LISTS
    return [
        FieldError(path, message, reason, text if position == 0 else "")
        for position, (path, message, reason) in enumerate(found)
    ]


def _events_of(policy: dict[str, Any]) -> list[str]:
    # Volcano lists `events` first, then `event`, and drops repeats.
    listed = [str(event) for event in policy.get("events") or [] if event]
    if policy.get("event"):
        listed.append(str(policy["event"]))
    return list(dict.fromkeys(listed))


def _event_problem(
    policy: dict[str, Any], events: list[str], seen: set[str], here: str, volcano_path: str
) -> tuple[str, str, Reason] | None:
    action = str(policy.get("action") or "")
    for event in events:
        if event not in VALID_EVENTS:
            return (
                f"{here}.event",
                go_invalid(volcano_path, event, "invalid policy event"),
                "FieldValueNotSupported",
            )
        if action not in VALID_ACTIONS:
            return (
                f"{here}.action",
                go_invalid(volcano_path, action, "invalid policy action"),
                "FieldValueNotSupported",
            )
        if event in seen:
            return (
                f"{here}.event",
                f"duplicate event {event}  across different policy",
                "FieldValueDuplicate",
            )
        seen.add(event)
    return None
