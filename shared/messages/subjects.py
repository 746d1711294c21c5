"""The only place subjects and stream names are spelled.

Subjects carry the object key (`<kind>.<namespace>.<name>`) so that consumers can filter and keep
one object's events in order. Kubernetes names may contain dots, which NATS reads as token
separators, so every token is escaped: `.`, `*`, `>`, `%` and whitespace become `%XX`.
Cluster-scoped objects use `_` as their namespace token (no namespace can be named `_`).
"""

from __future__ import annotations

import re
from urllib.parse import unquote

CLUSTER_STREAM = "CLUSTER"
JOBS_STREAM = "JOBS"
DECISIONS_STREAM = "DECISIONS"
AUDIT_STREAM = "AUDIT"
DEADLETTER_STREAM = "DEADLETTER"

STREAM_SUBJECTS: dict[str, str] = {
    CLUSTER_STREAM: "cluster.>",
    JOBS_STREAM: "jobs.>",
    DECISIONS_STREAM: "decisions.>",
    AUDIT_STREAM: "audit.>",
    DEADLETTER_STREAM: "deadletter.>",
}

_UNSAFE = re.compile(r"[.*>%\s]")
CLUSTER_SCOPE = "_"


def escape_token(token: str) -> str:
    """Make `token` safe as one subject token; reversible with `unescape_token`."""
    if not token:
        return CLUSTER_SCOPE
    if token == CLUSTER_SCOPE:
        return "%5F"
    return _UNSAFE.sub(_percent_encode, token)


def _percent_encode(match: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in match.group().encode())


def unescape_token(token: str) -> str:
    return "" if token == CLUSTER_SCOPE else unquote(token)


def _key(namespace: str | None, name: str) -> str:
    return f"{escape_token(namespace or '')}.{escape_token(name)}"


def cluster_object(kind: str, namespace: str | None, name: str) -> str:
    """A change to one Kubernetes object: `cluster.<kind>.<ns>.<name>` (kind lower-case)."""
    return f"cluster.{kind.lower()}.{_key(namespace, name)}"


def cluster_kind(kind: str) -> str:
    """Every change to objects of one kind (a consumer's filter): `cluster.<kind>.>`."""
    return f"cluster.{kind.lower()}.>"


def all_decisions() -> str:
    """Every decision about every gang (a consumer's filter): `decisions.>`."""
    return STREAM_SUBJECTS[DECISIONS_STREAM]


def audit_of(service: str) -> str:
    """Every audit event one service may publish (its NATS permission): `audit.<service>.>`."""
    return f"audit.{service}.>"


def cluster_resynced(kind: str) -> str:
    return f"cluster.{kind.lower()}._resynced"


def decision(namespace: str, gang: str) -> str:
    """Every scheduler decision about one gang: `decisions.<ns>.<podgroup>`.

    One subject per gang, whatever the decision (its event type says which), because consumers keep
    order per subject: an "unschedulable" must never be handled after the "placed" that followed it.
    """
    return f"decisions.{_key(namespace, gang)}"


def is_decision(subject: str) -> bool:
    """Whether `subject` is one of `decision`'s."""
    return subject.startswith(STREAM_SUBJECTS[DECISIONS_STREAM].removesuffix(">"))


def job_event(what: str, namespace: str, name: str) -> str:
    return f"jobs.{what}.{_key(namespace, name)}"


def audit(service: str, action: str, namespace: str | None, name: str) -> str:
    return f"audit.{service}.{escape_token(action)}.{_key(namespace, name)}"


def deadletter(stream: str, durable: str) -> str:
    return f"deadletter.{stream.lower()}.{escape_token(durable)}"
