"""Pure: why a job waits, in sentences a user acts on — plain facts in, lines out.

`insight` gathers the facts (the API's job and PodGroup, the scheduler's recorded verdict, a
dry-run of the scheduler's pure cycle over its own snapshot, the audit stream's history); this
module orders the blockers as the scheduler meets them — the queue's state, the gang's own
minimum, the queue's capability, its fair share, the nodes, then the gangs ahead of it — and says
for each what would let the job start.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from shared.domain.quantity import format_milli

Amounts = dict[str, int]  # resource name -> milli-units
_FIT = re.compile(r"(\d+)/(\d+) nodes are (?:un)?available: (.*?)\.?$")
_COUNTED = re.compile(r"^(\d+) (.*)$")
DEVICE_CLAIM_UNSATISFIABLE = "DeviceClaimUnsatisfiable"  # the scheduler's structured reason
_ORIGIN = re.compile(r"Origin reason is: (.*)$")  # the job's own reason ends the condition message
_BELOW_MINIMUM = ("NotEnoughTasks", "NotEnoughPodsOfTask", "GangReleased")


def amount(name: str, milli: int) -> str:
    return format_milli(milli, binary=name in ("memory", "ephemeral-storage"))


def amounts(values: Amounts) -> str:
    return ", ".join(f"{name}={amount(name, v)}" for name, v in sorted(values.items()) if v) or "nothing"


@dataclass(frozen=True)
class QueueFacts:
    name: str
    state: str
    weight: int
    capability: Amounts  # only the limited resources
    allocated: Amounts
    admitted: Amounts  # minimums of gangs admitted (Inqueue) but not yet placed
    deserved: Amounts | None  # proportion's share; None when the plugin is off
    share: float
    guarantee: Amounts = field(default_factory=dict)
    real_capability: Amounts = field(default_factory=dict)  # capability, capped by the cluster's size


@dataclass(frozen=True)
class GangFacts:
    namespace: str
    name: str
    queue: str
    phase: str
    priority: int
    min_member: int
    placed: int  # tasks bound, running or done
    valid: int  # tasks that exist and are not failed
    need: Amounts  # what it still needs to reach its minimum
    task_request: Amounts  # one waiting task's request
    created: datetime | None = None


@dataclass(frozen=True)
class Ahead:
    """A gang the scheduler serves first in the same queue."""

    namespace: str
    name: str
    priority: int
    phase: str
    holds: Amounts


@dataclass(frozen=True)
class Verdict:
    reason: str
    message: str
    since: datetime | None = None
    fit_errors: str = ""
    detail: str = ""


@dataclass(frozen=True)
class Facts:
    job: str  # what is explained: "Job default/x" or "PodGroup default/x"
    job_phase: str
    condition: Verdict | None = None  # the PodGroup's Unschedulable condition
    recorded: Verdict | None = None  # the scheduler's row in gang_verdicts
    dry_run: Verdict | None = None  # what the scheduler's cycle says now
    gang: GangFacts | None = None
    queue: QueueFacts | None = None
    ahead: tuple[Ahead, ...] = ()
    nodes_total: int = 0
    nodes_could_hold: int = 0  # nodes whose allocatable could hold one waiting task when empty
    history: tuple[tuple[datetime | None, str, str], ...] = ()  # (when, what, message)
    notes: tuple[str, ...] = ()  # what could not be read, and why
    predicted_start: str = ""  # reservation backfill's prediction on the PodGroup (docs/backfill.md)


@dataclass(frozen=True)
class Blocker:
    kind: str  # queue-state | minimum | capability | share | topology | nodes | priority
    says: str
    fix: str


def predicates(fit_errors: str) -> tuple[int, list[tuple[int, str]]]:
    """`0/4 nodes are unavailable: 2 Insufficient cpu, 2 node(s) had untolerated taint` ->
    (4, [(2, "Insufficient cpu"), (2, "node(s) had untolerated taint")])."""
    match = _FIT.search(fit_errors.strip())
    if match is None:
        return 0, []
    counted = []
    for part in match[3].split(", "):
        found = _COUNTED.match(part.strip())
        if found:
            counted.append((int(found[1]), found[2]))
    return int(match[2]), counted


def _capability_blocker(queue: QueueFacts, need: Amounts) -> Blocker | None:
    short = {}
    for name, limit in (queue.real_capability or queue.capability).items():
        used = queue.allocated.get(name, 0) + queue.admitted.get(name, 0)
        wanted = need.get(name, 0)
        if wanted and used + wanted > limit:
            short[name] = (used, limit, used + wanted - limit)
    if not short:
        return None
    says = "; ".join(
        f"{name} used {amount(name, used)}/{amount(name, limit)} "
        f"({'capability' if name in queue.capability else 'all the cluster can give it'}), the job needs "
        f"{amount(name, need[name])}"
        for name, (used, limit, _) in sorted(short.items())
    )
    more = ", ".join(
        f"{amount(name, missing)} more {name}" for name, (_, _, missing) in sorted(short.items())
    )
    return Blocker(
        "capability",
        f"queue {queue.name}: {says}",
        f"needs {more} in queue {queue.name}: jobs there finish, or raise its capability "
        f"(vcctl queue operate -n {queue.name} -a update --capability ...)",
    )


def _share_blocker(queue: QueueFacts) -> Blocker | None:
    if queue.deserved is None:
        return None
    over = {n: d for n, d in queue.deserved.items() if queue.allocated.get(n, 0) >= d and d}
    if not over:
        return None
    says = ", ".join(
        f"{n} allocated {amount(n, queue.allocated.get(n, 0))}/{amount(n, d)} deserved"
        for n, d in sorted(over.items())
    )
    return Blocker(
        "share",
        f"queue {queue.name} is at its fair share (weight {queue.weight}, share {queue.share:.2f}): {says}",
        f"waits until queue {queue.name} uses less than it deserves (its jobs finish), or its weight rises",
    )


def _node_blocker(facts: Facts, fit_errors: str) -> Blocker | None:
    total, failing = predicates(fit_errors)
    gang = facts.gang
    if not failing and not (gang and facts.nodes_total and facts.nodes_could_hold == 0 and gang.task_request):
        return None
    lines = ", ".join(f"{count} fail {what}" for count, what in failing) or "none fits"
    says = f"nodes: {total or facts.nodes_total} checked, {lines}"
    missing = max(0, gang.min_member - gang.placed) if gang else 0
    request = amounts(gang.task_request) if gang else "its request"
    if gang and facts.nodes_could_hold == 0:
        fix = f"waits for {missing} node(s) that can each hold {request}: none of the {facts.nodes_total}"
        fix += " nodes is so large (add such nodes, or ask for less per pod)"
    else:
        fix = f"waits for room for {missing} more pod(s) of {request} on the nodes"
        fix += " (other pods finish, or nodes are added)"
    return Blocker("nodes", says, fix)


def _device_blocker(facts: Facts, reasons: set[str]) -> Blocker | None:
    """A DRA claim no node could ever satisfy as it stands (services/scheduler/core/devices.py)."""
    if DEVICE_CLAIM_UNSATISFIABLE not in reasons:
        return None
    verdicts = [v for v in (facts.dry_run, facts.recorded, facts.condition) if v is not None]
    said = next((v.detail for v in verdicts if v.detail), "")
    if not said:
        found = next((m for v in verdicts if (m := _ORIGIN.search(v.message))), None)
        said = found.group(1) if found else "a resourceclaim of the job can never be allocated"
    return Blocker(
        "devices",
        said,
        "waiting will not help: ask for fewer devices or looser selectors, create the missing claim or "
        "device class, or add nodes whose devices match",
    )


TOPOLOGY_SAYS = "network topology: "


def _topology_blocker(facts: Facts) -> Blocker | None:
    """The scheduler's own words for a network-topology constraint no HyperNode meets, e.g.
    "no HyperNode of tier 1 or lower has room for the 8 pod(s) the job needs; the best, s1
    (tier 1), has room for 5"."""
    for verdict in (facts.dry_run, facts.recorded, facts.condition):
        if verdict is None:
            continue
        for text in (verdict.detail, verdict.message):
            if TOPOLOGY_SAYS in text:
                says = text.split(TOPOLOGY_SAYS, 1)[1].strip()
                fix = (
                    "waits until a HyperNode within its networkTopology limit has that room (its pods "
                    "finish, or nodes join it), or runs sooner with a higher highestTierAllowed or "
                    "mode: soft"
                )
                return Blocker("topology", f"network topology: {says}", fix)
    return None


def _priority_blocker(facts: Facts) -> Blocker | None:
    if not facts.ahead or facts.gang is None:
        return None
    names = "; ".join(
        f"{a.namespace}/{a.name} (priority {a.priority}, {a.phase}, holds {amounts(a.holds)})"
        for a in facts.ahead
    )
    return Blocker(
        "priority",
        f"ahead in queue {facts.gang.queue} (priority {facts.gang.priority}): {names}",
        "starts after the gangs ahead are placed or finish, or with a higher priorityClassName",
    )


def blockers(facts: Facts) -> list[Blocker]:
    verdict = facts.dry_run or facts.recorded
    if verdict is None and facts.condition is None:
        return []
    found: list[Blocker] = []
    queue, gang = facts.queue, facts.gang
    if queue is not None and queue.state != "Open":
        found.append(
            Blocker(
                "queue-state",
                f"queue {queue.name} is {queue.state}: it takes no new work",
                f"open it: vcctl queue operate -n {queue.name} -a open",
            )
        )
    reasons = {v.reason for v in (facts.dry_run, facts.recorded, facts.condition) if v is not None}
    if gang is not None and (reasons & set(_BELOW_MINIMUM) or gang.valid < gang.min_member):
        found.append(
            Blocker(
                "minimum",
                f"the gang has {gang.valid} valid pod(s) but needs at least {gang.min_member} (minMember)",
                f"create {gang.min_member - gang.valid} more pod(s) of the gang, or lower its minAvailable "
                f"to {gang.valid}",
            )
        )
    if queue is not None and gang is not None:
        share = _share_blocker(queue) if "QueueOverused" in reasons else None
        found.extend(b for b in (_capability_blocker(queue, gang.need), share) if b is not None)
    devices = _device_blocker(facts, reasons)
    if devices is not None:
        found.append(devices)
    fit_errors = next((v.fit_errors for v in (facts.dry_run, facts.recorded) if v and v.fit_errors), "")
    if not fit_errors and facts.condition is not None:
        fit_errors = facts.condition.message  # "... Origin reason is <task>: 0/4 nodes are unavailable: ..."
    topology = _topology_blocker(facts)
    node = _node_blocker(facts, fit_errors) if topology is None else None
    found.extend(b for b in (topology, node) if b is not None)
    priority = _priority_blocker(facts)
    if priority is not None:
        found.append(priority)
    return found


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment else "?"


def render(facts: Facts) -> str:
    lines = [f"{facts.job}: {facts.job_phase or 'Pending'}"]
    verdict = facts.condition or facts.recorded or facts.dry_run
    found = blockers(facts)
    if verdict is None and not found:
        lines.append("Nothing blocks it: the scheduler records no verdict for its gang.")
    if verdict is not None:
        lines += [
            "",
            f"Volcano says ({verdict.reason}, since {_when(verdict.since)}):",
            f"  {verdict.message}",
        ]
    if facts.predicted_start:
        lines += ["", f"Expected to start at {facts.predicted_start} (reservation backfill's plan)."]
    if found:
        lines += ["", "Blocked by, in the order the scheduler checks:"]
        lines += [f"  {i}. [{b.kind}] {b.says}" for i, b in enumerate(found, 1)]
        lines += ["", "Would start when:"] + [f"  - {b.fix}" for b in found]
    if facts.history:
        lines += ["", "Verdicts over time:"]
        lines += [f"  {_when(when)}  {what}  {message}" for when, what, message in facts.history]
    for note in facts.notes:
        lines.append(f"(note: {note})")
    return "\n".join(lines)


def as_document(facts: Facts) -> dict[str, object]:
    return {
        "job": facts.job,
        "phase": facts.job_phase,
        "condition": facts.condition.message if facts.condition else None,
        "predicted_start": facts.predicted_start or None,
        "blockers": [{"kind": b.kind, "says": b.says, "fix": b.fix} for b in blockers(facts)],
        "history": [{"time": _when(w), "what": what, "message": m} for w, what, m in facts.history],
        "notes": list(facts.notes),
    }


def render_queue(
    queue: QueueFacts, phases: Mapping[str, int], waiting: list[tuple[str, str, str, str]]
) -> str:
    """`queue why`: the queue's limits and share as the scheduler sees them, and who waits in it."""
    deserved = (
        amounts(queue.deserved)
        if queue.deserved is not None
        else "none (no gang in it, or proportion is off)"
    )
    lines = [
        f"Queue {queue.name}: {queue.state}, weight {queue.weight}",
        f"  capability  {amounts(queue.capability) if queue.capability else 'unlimited'}",
        f"  guarantee   {amounts(queue.guarantee)}",
        f"  deserved    {deserved}",
        f"  allocated   {amounts(queue.allocated)}",
        f"  admitted    {amounts(queue.admitted)}  (minimums of admitted gangs not yet placed)",
        f"  share       {queue.share:.2f}  (allocated / deserved, on its dominant resource)",
        "  PodGroups   "
        + ", ".join(
            f"{p} {phases.get(p, 0)}" for p in ("Inqueue", "Pending", "Running", "Unknown", "Completed")
        ),
    ]
    if queue.deserved is not None:
        over = [n for n, d in queue.deserved.items() if d and queue.allocated.get(n, 0) >= d]
        if over:
            names = ", ".join(sorted(over))
            lines.append(
                f"  allocated has reached its deserved share in {names}"
                " (deserved grows with what its gangs ask for, up to its weight's part of the cluster)"
            )
    if waiting:
        lines += ["", "Waiting gangs:"] + [
            f"  {ns}/{name}  {reason}: {message}" for ns, name, reason, message in waiting
        ]
    else:
        lines += ["", "No gang waits in this queue."]
    return "\n".join(lines)


def queue_document(
    queue: QueueFacts, phases: Mapping[str, int], waiting: list[tuple[str, str, str, str]]
) -> dict[str, object]:
    return {
        "name": queue.name,
        "state": queue.state,
        "weight": queue.weight,
        "capability": {n: amount(n, v) for n, v in queue.capability.items()},
        "deserved": {n: amount(n, v) for n, v in queue.deserved.items()}
        if queue.deserved is not None
        else None,
        "allocated": {n: amount(n, v) for n, v in queue.allocated.items()},
        "admitted": {n: amount(n, v) for n, v in queue.admitted.items()},
        "share": round(queue.share, 4),
        "podgroups": dict(phases),
        "waiting": [{"gang": f"{ns}/{name}", "reason": r, "message": m} for ns, name, r, m in waiting],
    }
