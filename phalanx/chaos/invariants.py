"""The oracle's second half: queue capability (I3), effects once (I6) and recovery (I7), and the
whole judgement of a run that `phalanx chaos` hands its trace to.

Pure functions over plain data, like oracle.py (I1, I2, I4, I5), and from the same source: the
simulated API server's pod trace, its Events and its Queues, never what Phalanx believes.

- I3 replaying binds and releases in order, no queue ever holds more than its capability, for
  each resource the capability names (Volcano's `spec.capability`: the most a queue's running pods
  may use at once);
- I6 effects happen once: a pod name (a job's task and index) is created once, unless the pod
  before it failed and the job made a new one; and no pod gets the scheduler's `Scheduled` Event
  more than once, however often its decision was redelivered;
- I7 the backlog drains after each fault heals: no pod waits for its bind longer than
  `recover_s` past the later of its creation and the end of the last fault that began before it
  was bound, and the last pod ends within `recover_s` of the later of the last fault's end and
  the last pod's creation (work keeps arriving after the last fault).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from phalanx.chaos.oracle import TERMINAL_POD_PHASES, PodChange, Verdict, Violation, examine, ordered

RECOVER_S = 120.0  # T_recover: how long the backlog may take to move again after a fault heals


@dataclass(frozen=True)
class FaultSpan:
    """A fault from its start to the moment it healed (the process answered again), wall clock."""

    kind: str
    start: float
    end: float


def check_queue_capability(
    changes: Iterable[PodChange],
    queue_of_group: Mapping[str, str],
    capability: Mapping[str, Mapping[str, int]],
) -> tuple[list[Violation], dict[str, float]]:
    """I3: per queue, what its pods hold at every instant stays within its capability. Returns the
    violations and each capped queue's peak use of its most used capped resource (a fraction)."""
    holding: dict[str, dict[str, Mapping[str, int]]] = defaultdict(dict)  # queue -> uid -> requests
    queue_of_pod: dict[str, str] = {}
    peak: dict[str, float] = {}
    violations: list[Violation] = []
    for change in changes:
        previous = queue_of_pod.pop(change.uid, None)
        if previous is not None:
            holding[previous].pop(change.uid, None)
        queue = queue_of_group.get(change.gang, "")
        limits = capability.get(queue)
        if not change.holds_node or not limits:
            continue
        queue_of_pod[change.uid] = queue
        holding[queue][change.uid] = change.requests
        for name, limit in limits.items():
            used = sum(requests.get(name, 0) for requests in holding[queue].values())
            if used > limit:
                violations.append(
                    Violation(
                        "I3",
                        f"queue {queue} held {used} milli-{name} of its capability {limit} after "
                        f"binding {change.pod} (resourceVersion {change.rv})",
                    )
                )
            elif limit:
                peak[queue] = max(peak.get(queue, 0.0), used / limit)
    return violations, peak


def check_effects_once(
    changes: Sequence[PodChange], scheduled_events: Mapping[str, int]
) -> tuple[list[Violation], int]:
    """I6: every pod name created once (a re-creation only after its pod failed), and at most one
    `Scheduled` Event per pod uid (`scheduled_events`: uid -> the Events' summed count). Returns
    the violations and how many bound pods got no `Scheduled` Event at all (events are best
    effort: a controller killed between a bind and its Event loses the Event, it never doubles)."""
    violations: list[Violation] = []
    last_uid: dict[str, str] = {}
    last_phase: dict[str, str] = {}
    bound: set[str] = set()
    for change in changes:
        earlier = last_uid.get(change.pod)
        again = change.type == "ADDED" and earlier is not None and earlier != change.uid
        if again and earlier is not None and last_phase.get(earlier) != "Failed":
            violations.append(
                Violation(
                    "I6",
                    f"pod {change.pod} created again (uid {change.uid}) though its pod "
                    f"{earlier} had not failed ({last_phase.get(earlier) or 'no phase'})",
                )
            )
        last_uid[change.pod] = change.uid
        last_phase[change.uid] = change.phase
        if change.node:
            bound.add(change.uid)
    for uid, count in sorted(scheduled_events.items()):
        if count > 1:
            violations.append(Violation("I6", f"pod uid {uid} got the Scheduled Event {count} times"))
    return violations, len(bound - set(scheduled_events))


def check_recovery(
    changes: Sequence[PodChange],
    faults: Sequence[FaultSpan],
    *,
    recover_s: float = RECOVER_S,
) -> tuple[list[Violation], dict[str, float]]:
    """I7: each pod is bound within `recover_s` of the later of its creation and the end of the last
    fault that began before its bind; the run drains within `recover_s` of the later of the last
    fault's end and the last pod's creation.
    Returns the violations and the figures: longest wait for a bind, longest after a fault healed,
    and the drain time."""
    created: dict[str, float] = {}
    waits: list[tuple[float, float, str]] = []  # total wait, wait past the last healed fault, pod
    for change in changes:
        if change.type == "ADDED":
            created.setdefault(change.uid, change.at)
        elif change.node and change.uid in created:
            start = created.pop(change.uid)
            healed = max((f.end for f in faults if f.start < change.at), default=start)
            # A pod bound while a fault was still going on did not wait past its healing at all.
            waits.append((change.at - start, max(0.0, change.at - max(start, healed)), change.pod))
    violations = [
        Violation("I7", f"pod {pod} waited {past:.1f} s for its bind after the last fault healed")
        for _total, past, pod in waits
        if past > recover_s
    ]
    # Work may keep arriving after the last fault: the drain runs from the later of the two.
    last_fault_end = max((f.end for f in faults), default=None)
    last_arrival = max((c.at for c in changes if c.type == "ADDED"), default=None)
    last_job_end = max((c.at for c in changes if c.phase in TERMINAL_POD_PHASES), default=None)
    drain = 0.0
    if last_job_end is not None and last_fault_end is not None:
        drain = max(0.0, last_job_end - max(last_fault_end, last_arrival or last_fault_end))
        if drain > recover_s:
            violations.append(
                Violation("I7", f"the last pod ended {drain:.1f} s after the last fault and arrival")
            )
    figures = {
        "longest wait for a bind (s)": round(max((w[0] for w in waits), default=0.0), 3),
        "longest wait for a bind after a fault healed (s)": round(max((w[1] for w in waits), default=0.0), 3),
        "drained after the last fault and the last pod's arrival (s)": round(drain, 3),
    }
    return violations, figures


def judge(
    trace: Mapping[str, Any],
    *,
    allocatable: Mapping[str, Mapping[str, int]],
    capability: Mapping[str, Mapping[str, int]],
    scheduled_events: Mapping[str, int] | None = None,
    faults: Sequence[FaultSpan] = (),
    submitted: Iterable[str] = (),
    job_phases: Mapping[str, str] | None = None,
    quiescent: bool = True,
    recover_s: float = RECOVER_S,
) -> Verdict:
    """All seven invariants over one run. Mid-run (`quiescent=False`) I1, I2, I3 and the pod
    half of I6 apply; gangs, jobs, Events and the drain are judged once the run is quiet."""
    records = trace["records"]
    verdict = examine(
        records,
        allocatable=allocatable,
        min_member=trace["minMember"],
        submitted=submitted,
        job_phases=job_phases,
        quiescent=quiescent,
    )
    changes = ordered(records)
    queue_violations, queue_peak = check_queue_capability(changes, trace.get("queue") or {}, capability)
    effect_violations, without_event = check_effects_once(changes, scheduled_events or {})
    violations = queue_violations + effect_violations
    peak = round(max(queue_peak.values(), default=0.0), 3)
    figures: dict[str, Any] = {"peak queue use of its capability": peak}
    if quiescent:
        recovery_violations, recovery = check_recovery(changes, faults, recover_s=recover_s)
        violations += recovery_violations
        figures |= recovery | {"bound pods with no Scheduled Event (lost, tolerated)": without_event}
    verdict.violations.extend(violations)
    counts = dict(verdict.figures["violations by invariant"])
    for violation in violations:
        counts[violation.invariant] = counts.get(violation.invariant, 0) + 1
    verdict.figures |= figures | {"violations by invariant": dict(sorted(counts.items()))}
    return verdict
