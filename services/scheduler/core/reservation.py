"""Pure: reservation backfill and start-time predictions, configured on the backfill action.

Without configuration nothing here runs and the cycle is Volcano's. With
`configurations: [{name: backfill, arguments: {reservation: backfill}}]` in volcano-scheduler.conf:

- allocate takes gangs in its usual order. The first gang that cannot start for lack of room (not
  for its queue's limits) gets a reservation: the earliest moment it fits, planned over the running
  gangs' expected ends (`profile.py`, estimates from `estimates.py`), and the nodes it would use
  then. `reservationDepth` gangs get one (1 is Slurm's EASY backfill).
- A later gang may start now only if it is expected to end before every reservation it touches
  starts, or touches none of the reserved nodes (`ReservationBook.admits`). A gang with no estimate
  never ends "before", so it may use only nodes no reservation holds.
- `reservation: strict` lets nothing start after the first blocked gang: the baseline that
  backfill must not be worse than for the blocked gangs.

After the actions, `predict` plans every waiting gang in the same order into one profile, each
around those before it (Slurm's `squeue --start`), up to `predictedGangs` gangs. A prediction is
republished only when it moves by more than the materiality rule (`material`).

Overrun: a gang running past its estimate is expected to end 10% of its estimate later (at least
10 s), re-planned every cycle, so it pushes the reservation back step by step. Nothing is preempted
for a reservation; a preempt action in the configuration still applies Volcano's own rules, with
the owner's `volcano.sh/preemptable` annotation deciding who may be preempted.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from services.scheduler.core.config import SchedulerConf, parse_duration
from services.scheduler.core.estimates import (
    PREDICTED_START,
    Estimate,
    estimate,
    format_instant,
    parse_instant,
)
from services.scheduler.core.placement import Placer
from services.scheduler.core.plan import GangVerdict, StartPrediction
from services.scheduler.core.profile import FOREVER, Need, Profile
from services.scheduler.core.snapshot import BOUND, PENDING, RUNNING, Snapshot
from services.scheduler.core.state import CycleState, GangView

OVERRUN_SHARE = 0.1
OVERRUN_FLOOR_SECONDS = 10.0
# A new prediction is published when it moves by more than this share of the wait still ahead,
# and by more than the floor.
MATERIAL_SHARE = 0.1
MATERIAL_FLOOR_SECONDS = 2.0
RESERVED = "Reserved"
DEFAULT = "defaultRuntime"  # the source of an estimate that came from the configuration


@dataclass(frozen=True, slots=True)
class BackfillSettings:
    mode: str = "none"  # none (Volcano's backfill) | backfill | strict
    depth: int = 1
    predicted_gangs: int = 100
    default_runtime: float | None = None  # what a gang with no estimate is planned to run for

    @classmethod
    def of(cls, conf: SchedulerConf) -> BackfillSettings:
        arguments = conf.configurations.get("backfill") or {}
        default = parse_duration(arguments["defaultRuntime"]) if "defaultRuntime" in arguments else None
        return cls(
            mode=str(arguments.get("reservation", "none")),
            depth=int(arguments.get("reservationDepth", 1)),
            predicted_gangs=int(arguments.get("predictedGangs", 100)),
            default_runtime=default.total_seconds() if default is not None else None,
        )


@dataclass(frozen=True, slots=True)
class Reservation:
    gang_uid: str
    name: str  # namespace/name, for the message of the gangs it holds back
    start: float  # seconds after the cycle's now
    nodes: frozenset[int]
    needs: tuple[Need, ...]
    placement: tuple[int, ...]
    duration: float


@dataclass(slots=True)
class ReservationBook:
    """The reservations of one cycle, made and consulted by allocate (actions/allocate.py)."""

    settings: BackfillSettings
    estimates: dict[str, Estimate]
    now: datetime
    reservations: list[Reservation] = field(default_factory=list)
    blocked: list[GangView] = field(default_factory=list)  # gangs that could not start, in order

    def end_of(self, gang: GangView) -> float:
        return expected_end(gang, self.estimates[gang.uid], self.now)

    def duration(self, gang: GangView) -> float:
        seconds = self.estimates[gang.uid].seconds
        return FOREVER if seconds is None else seconds

    def admits(self, gang: GangView, nodes: set[int]) -> str | None:
        """None when the gang may start now on `nodes`; else the message saying what it would delay."""
        if self.settings.mode == "strict" and self.blocked:
            first = self.blocked[0].info
            return f"strict order: waits behind {first.namespace}/{first.name}"
        end = self.duration(gang)
        for reservation in self.reservations:
            if end > reservation.start and nodes & reservation.nodes:
                return f"would delay the reservation of {reservation.name}"
        return None

    def held_against(self, gang: GangView) -> frozenset[int]:
        """The nodes of every reservation the gang would still be running at the start of."""
        end = self.duration(gang)
        held: set[int] = set()
        for reservation in self.reservations:
            if end > reservation.start:
                held |= reservation.nodes
        return frozenset(held)

    def on_blocked(self, state: CycleState, placer: Placer, gang: GangView) -> None:
        """Record a gang that could not start; reserve for it while fewer than depth have one."""
        if gang in self.blocked or (gang.block_reason or "").startswith("Queue"):
            return
        self.blocked.append(gang)
        if self.settings.mode != "backfill" or len(self.reservations) >= self.settings.depth:
            return
        profile = Profile(state, self.end_of)
        for earlier in self.reservations:
            profile.hold(earlier.start, earlier.duration, earlier.needs, earlier.placement)
        needs = needs_of(gang, placer)
        duration = self.duration(gang)
        found = profile.earliest(needs, duration) if needs else None
        if found is None:
            return  # no start can be foreseen: nothing to protect, Volcano's behaviour for it
        start, placement = found
        self.reservations.append(
            Reservation(
                gang.uid,
                f"{gang.info.namespace}/{gang.info.name}",
                start,
                frozenset(placement),
                needs,
                tuple(placement),
                duration,
            )
        )


def book_for(snapshot: Snapshot, conf: SchedulerConf, state: CycleState) -> ReservationBook | None:
    settings = BackfillSettings.of(conf)
    if settings.mode == "none":
        return None
    estimates = {gang.uid: estimate(gang.info, snapshot.runtime_history) for gang in state.gangs}
    if settings.default_runtime is not None:  # as Slurm plans a job without a limit with its partition's
        fallback = Estimate(settings.default_runtime, DEFAULT)
        estimates = {
            uid: known if known.seconds is not None else fallback for uid, known in estimates.items()
        }
    return ReservationBook(settings, estimates, snapshot.now)


def expected_end(gang: GangView, known: Estimate, now: datetime) -> float:
    """Seconds from now until the gang's nodes free up: its start plus its estimate, the overrun
    rule once that has passed, never when there is no estimate."""
    if known.seconds is None:
        return FOREVER
    starts = [t.info.started for t in gang.tasks if t.info.started and t.status in (BOUND, RUNNING)]
    if not starts:
        return known.seconds  # placed this cycle, or bound and not started yet
    left = known.seconds - (now - min(s for s in starts if s is not None)).total_seconds()
    if left > 0:
        return left
    return max(OVERRUN_FLOOR_SECONDS, OVERRUN_SHARE * known.seconds)


def needs_of(gang: GangView, placer: Placer) -> tuple[Need, ...]:
    """The tasks the gang still needs placed to reach its minimum, in task order."""
    pending = sorted(
        (t for t in gang.tasks if t.status == PENDING and not t.best_effort), key=lambda t: t.order
    )
    missing = max(0, gang.info.min_member - gang.ready - gang.waiting - gang.pending_best_effort)
    if gang.info.min_member < len(gang.tasks):
        pending = pending[:missing]
    return tuple(Need(t.request, placer.static_fit(t).candidates) for t in pending)


def predict(book: ReservationBook, state: CycleState, placer: Placer) -> tuple[StartPrediction, ...]:
    """Plan every waiting gang into one profile, in order; each prediction is when it fits."""
    profile = Profile(state, book.end_of)
    reserved = {r.gang_uid for r in book.reservations}
    predictions = []
    # In strict order no gang starts before the one ahead of it.
    not_before = 0.0
    for gang in book.blocked[: book.settings.predicted_gangs]:
        if gang.is_ready():
            continue
        needs = needs_of(gang, placer)
        duration = book.duration(gang)
        found = profile.earliest(needs, duration, not_before) if needs else None
        start: datetime | None = None
        if found is not None:
            offset, placement = found
            profile.hold(offset, duration, needs, placement)
            start = book.now + timedelta(seconds=offset)
            if book.settings.mode == "strict":
                not_before = offset
        elif book.settings.mode == "strict":
            not_before = FOREVER
        previous = parse_instant(gang.info.annotations.get(PREDICTED_START))
        known = book.estimates[gang.uid]
        predictions.append(
            StartPrediction(
                gang.uid,
                gang.info.namespace,
                gang.info.name,
                start,
                previous if not material(previous, start, book.now) else start,
                gang.uid in reserved,
                known.seconds,
                known.source,
            )
        )
    return tuple(predictions)


def material(previous: datetime | None, new: datetime | None, now: datetime) -> bool:
    """Whether `new` differs enough from the published `previous` to be published instead."""
    if previous is None or new is None:
        return previous != new
    ahead = max(0.0, (previous - now).total_seconds())
    moved = abs((new - previous).total_seconds())
    return moved > max(MATERIAL_FLOOR_SECONDS, MATERIAL_SHARE * ahead)


def with_predictions(
    verdicts: tuple[GangVerdict, ...], predictions: tuple[StartPrediction, ...]
) -> tuple[GangVerdict, ...]:
    """Each waiting gang's published prediction, in its verdict and at the end of its message."""
    published = {p.gang_uid: p for p in predictions if p.published is not None}
    result = []
    for verdict in verdicts:
        prediction = published.get(verdict.gang_uid)
        if prediction is None or prediction.published is None:
            result.append(verdict)
            continue
        moment = format_instant(prediction.published)
        suffix = f"; expected to start at {moment}" + (" (reserved)" if prediction.reserved else "")
        result.append(replace(verdict, message=verdict.message + suffix, predicted_start=moment))
    return tuple(result)
