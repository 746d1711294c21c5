"""The invariant oracle: from the simulated API server's own pod trace to violations and figures.

Pure functions over plain data. `phalanx chaos` fetches the trace (`GET /simulator/v1/audit/trace`:
every pod creation, bind, phase change and deletion, in resourceVersion order), the nodes'
allocatable, the PodGroups' minMember and the jobs' phases, and hands them here. The checks follow
docs/reliability.md's invariants:

- I1 a pod (by uid) is bound once, to one node;
- I2 replaying binds and releases in order, no node ever holds more than it can allocate;
- I4 every gang that had a member bound reached minMember; the time it spent in between (first
  bind to the minMember-th) is measured, the figure a controller restart stretches;
- I5 every job that was submitted still exists and ended in a terminal phase (none lost).

The trace comes from the server, not from Phalanx, so a wrong belief in the scheduler's state
cannot hide a violation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

TERMINAL_POD_PHASES = frozenset({"Succeeded", "Failed"})
TERMINAL_JOB_PHASES = frozenset({"Completed", "Failed", "Aborted", "Terminated"})
MAX_REPORTED = 20  # violations of one kind beyond this are counted, not listed


@dataclass(frozen=True)
class PodChange:
    """One record of the trace: the pod's placement after a committed write."""

    rv: int
    at: float
    type: str  # ADDED, MODIFIED, DELETED
    uid: str
    pod: str  # namespace/name
    group: str  # the PodGroup's name, in the pod's namespace; "" for a pod of no gang
    node: str
    phase: str
    requests: Mapping[str, int]
    reason: str = ""

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> PodChange:
        return cls(
            rv=int(record["rv"]),
            at=float(record["at"]),
            type=str(record["type"]),
            uid=str(record["uid"]),
            pod=str(record["pod"]),
            group=str(record.get("group") or ""),
            node=str(record.get("node") or ""),
            phase=str(record.get("phase") or ""),
            requests={k: int(v) for k, v in (record.get("requests") or {}).items()},
            reason=str(record.get("reason") or ""),
        )

    @property
    def gang(self) -> str:
        return f"{self.pod.split('/', 1)[0]}/{self.group}" if self.group else ""

    @property
    def holds_node(self) -> bool:
        return self.type != "DELETED" and bool(self.node) and self.phase not in TERMINAL_POD_PHASES


@dataclass(frozen=True)
class Violation:
    invariant: str
    detail: str


@dataclass
class GangWindow:
    """How long a gang had some but fewer than minMember members bound."""

    gang: str
    min_member: int
    first_bind: float
    complete_at: float | None = None
    bound: set[str] = field(default_factory=set)

    def seconds(self, now: float) -> float:
        return (self.complete_at if self.complete_at is not None else now) - self.first_bind


@dataclass
class Verdict:
    violations: list[Violation]
    figures: dict[str, Any]
    windows: dict[str, GangWindow] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.violations


def ordered(records: Iterable[Mapping[str, Any]]) -> list[PodChange]:
    return sorted((PodChange.from_record(r) for r in records), key=lambda c: c.rv)


def check_binds(changes: Iterable[PodChange]) -> tuple[list[Violation], int]:
    """I1: a uid's node goes from none to one node and never changes after; returns the binds."""
    node_of: dict[str, str] = {}
    violations: list[Violation] = []
    binds = 0
    for change in changes:
        before = node_of.get(change.uid, "")
        if not change.node or change.node == before:
            continue
        if before:
            violations.append(
                Violation("I1", f"pod {change.pod} (uid {change.uid}) moved from {before} to {change.node}")
            )
        else:
            binds += 1
        node_of[change.uid] = change.node
    return violations, binds


def check_capacity(
    changes: Iterable[PodChange], allocatable: Mapping[str, Mapping[str, int]]
) -> tuple[list[Violation], dict[str, float]]:
    """I2: replay holds and releases in order; returns violations and each node's peak use of its
    most used resource (a fraction of allocatable)."""
    holding: dict[str, dict[str, Mapping[str, int]]] = defaultdict(dict)  # node -> uid -> requests
    where: dict[str, str] = {}
    peak: dict[str, float] = {}
    violations: list[Violation] = []
    for change in changes:
        previous = where.pop(change.uid, None)
        if previous is not None:
            holding[previous].pop(change.uid, None)
        if not change.holds_node:
            continue
        where[change.uid] = change.node
        pods = holding[change.node]
        pods[change.uid] = change.requests
        capacity = allocatable.get(change.node, {})
        used: dict[str, int] = defaultdict(int)
        for requests in pods.values():
            for name, amount in requests.items():
                used[name] += amount
        for name, amount in used.items():
            limit = capacity.get(name, 0)
            if amount > limit:
                violations.append(
                    Violation(
                        "I2",
                        f"node {change.node} held {amount} milli-{name} of {limit} after binding "
                        f"{change.pod} (resourceVersion {change.rv})",
                    )
                )
            elif limit:
                peak[change.node] = max(peak.get(change.node, 0.0), amount / limit)
    return violations, peak


def gang_windows(changes: Iterable[PodChange], min_member: Mapping[str, int]) -> dict[str, GangWindow]:
    """Per gang, from its first bound member to the bind that made minMember (I4's partial time)."""
    windows: dict[str, GangWindow] = {}
    for change in changes:
        gang = change.gang
        if not gang or not change.node or change.type == "DELETED":
            continue
        window = windows.get(gang)
        if window is None:
            window = windows[gang] = GangWindow(gang, min_member.get(gang, 1), change.at)
        if change.uid in window.bound:
            continue
        window.bound.add(change.uid)
        if window.complete_at is None and len(window.bound) >= window.min_member:
            window.complete_at = change.at
    return windows


def check_gangs(windows: Mapping[str, GangWindow]) -> list[Violation]:
    """I4 at quiescence: no gang is left with fewer than minMember members ever bound."""
    return [
        Violation("I4", f"gang {w.gang} left with {len(w.bound)} of minMember {w.min_member} bound")
        for w in windows.values()
        if w.complete_at is None
    ]


def check_jobs(submitted: Iterable[str], phases: Mapping[str, str]) -> list[Violation]:
    """I5: every submitted job (namespace/name) exists and ended in a terminal phase."""
    violations = []
    for job in submitted:
        phase = phases.get(job)
        if phase is None:
            violations.append(Violation("I5", f"job {job} was submitted and is gone (lost)"))
        elif phase not in TERMINAL_JOB_PHASES:
            violations.append(Violation("I5", f"job {job} ended the run {phase or 'with no phase'}"))
    return violations


def examine(
    records: Iterable[Mapping[str, Any]],
    *,
    allocatable: Mapping[str, Mapping[str, int]],
    min_member: Mapping[str, int],
    submitted: Iterable[str] = (),
    job_phases: Mapping[str, str] | None = None,
    quiescent: bool = True,
) -> Verdict:
    """All checks over one trace. Mid-run (`quiescent=False`) only I1 and I2 apply: a gang may be
    partly bound and a job running while binds are in flight."""
    changes = ordered(records)
    bind_violations, binds = check_binds(changes)
    capacity_violations, peak = check_capacity(changes, allocatable)
    windows = gang_windows(changes, min_member)
    violations = bind_violations + capacity_violations
    submitted = list(submitted)
    phases = job_phases or {}
    if quiescent:
        violations += check_gangs(windows) + check_jobs(submitted, phases)
    end = changes[-1].at if changes else 0.0
    longest = max(windows.values(), key=lambda w: w.seconds(end), default=None)
    uids_by_name: dict[str, set[str]] = defaultdict(set)
    for change in changes:
        uids_by_name[change.pod].add(change.uid)
    figures = {
        "trace records": len(changes),
        "pods": len({c.uid for c in changes}),
        "binds": binds,
        "pods recreated under the same name": sum(1 for uids in uids_by_name.values() if len(uids) > 1),
        "pods refused by a kubelet (OutOf*)": len(
            {c.uid for c in changes if c.phase == "Failed" and c.reason.startswith("OutOf")}
        ),
        "gangs bound": len(windows),
        "gangs with no PodGroup found": sum(1 for gang in windows if gang not in min_member),
        "longest partial gang (s)": round(longest.seconds(end), 3) if longest else 0.0,
        "longest partial gang": longest.gang if longest else "",
        "peak node use": round(max(peak.values(), default=0.0), 3),
        "jobs submitted": len(submitted),
        "jobs by phase": _count(phases.get(job, "lost") for job in submitted),
        "violations by invariant": _count(v.invariant for v in violations),
    }
    return Verdict(violations, figures, windows)


def longest_across(
    windows: Mapping[str, GangWindow], intervals: Iterable[tuple[float, float]], end: float
) -> tuple[str, float]:
    """The gang that stayed partly bound longest while its window overlapped one of `intervals`
    (e.g. a controller being down and restarting): (gang, seconds), or ("", 0.0) if none did."""
    spans = list(intervals)
    best = ("", 0.0)
    for window in windows.values():
        closed = window.complete_at if window.complete_at is not None else end
        if closed > window.first_bind and any(a < closed and window.first_bind < b for a, b in spans):
            best = max(best, (window.gang, closed - window.first_bind), key=lambda pair: pair[1])
    return best


def _count(values: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for value in values:
        counts[value] += 1
    return dict(sorted(counts.items()))
